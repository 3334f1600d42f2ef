"""Any PennyLane circuit, PennyLane's layouts, and devices without classical-shadow support."""

import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp
from shadowqng import ShadowQNGOptimizer, ShotLedger, metric_tensor_fn, surrogate_qfim
from shadowqng.surrogate import measure_shadow


def _fd_qfim(state_fn, p0, h=1e-5):
    """4 Re(<∂ψ|∂ψ> - <∂ψ|ψ><ψ|∂ψ>) from central differences of the state (an independent reference)."""
    psi = state_fn(p0)
    d = np.array([(state_fn(p0 + h * e) - state_fn(p0 - h * e)) / (2 * h) for e in np.eye(len(p0))])
    b = d.conj() @ psi
    return 4 * np.real(d.conj() @ d.T - np.outer(b, b.conj()))


TEMPLATES = {
    "strongly_entangling": (lambda p: qml.StronglyEntanglingLayers(p.reshape(2, 3, 3), wires=[0, 1, 2]), 18),
    "basic_entangler": (lambda p: qml.BasicEntanglerLayers(p.reshape(2, 3), wires=[0, 1, 2]), 6),
    "rot": (lambda p: [qml.Hadamard(1), qml.Rot(*p[:3], wires=0), qml.CNOT([0, 1]), qml.Rot(*p[3:], wires=1)], 6),
    "controlled": (lambda p: [qml.RY(p[0], 0), qml.RY(p[1], 1), qml.CRX(p[2], wires=[0, 1]),
                              qml.CRY(p[3], wires=[1, 2]), qml.CRZ(p[4], wires=[2, 0])], 5),
    "state_prep": (lambda p: [qml.BasisState(np.array([1, 0, 1]), wires=[0, 1, 2]),
                              qml.BasicEntanglerLayers(p.reshape(1, 3), wires=[0, 1, 2]), qml.T(1),
                              qml.CRX(p[0], wires=[1, 2])], 3),
    "amplitude_prep": (lambda p: [qml.StatePrep(np.array([0.6, 0, 0, 0.8j]), wires=[0, 1]),
                                  qml.RX(p[0], 0), qml.IsingXY(p[1], wires=[0, 1])], 2),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_any_circuit_is_exact_at_k_equal_n(name):
    """k = n, no mask, exact expectations: the surrogate is the QFIM of the circuit as written, checked
    against finite differences of the state and, where PennyLane computes it, 4·adjoint_metric_tensor."""
    build, size = TEMPLATES[name]
    dev = qml.device("default.qubit", wires=3)

    @qml.qnode(dev)
    def cost(p):
        build(p)
        return qml.expval(qml.Z(0) @ qml.Z(1))

    @qml.qnode(dev)
    def state(p):
        build(p)
        return qml.state()

    p0 = np.random.default_rng(7).uniform(-np.pi, np.pi, size)
    f = surrogate_qfim(cost, pnp.array(p0, requires_grad=True), k=3, mask=False)
    ref = _fd_qfim(lambda p: np.asarray(state(p)), p0)
    assert np.abs(ref).max() > 0.1
    np.testing.assert_allclose(f, ref, atol=1e-7)
    if name not in ("state_prep", "amplitude_prep"):  # adjoint_metric_tensor cannot apply state preparations
        np.testing.assert_allclose(f, 4 * qml.adjoint_metric_tensor(cost)(pnp.array(p0, requires_grad=True)),
                                   atol=1e-9)


def test_metric_tensor_disagrees_on_controlled_rotations():
    """The README's note: on RY(0.4)⊗RY(0.9) then CRX(0.7), qml.metric_tensor(approx=None) gives the
    CRX entry 0.0246; the adjoint metric tensor, finite differences and the surrogate give 0.0096."""
    dev = qml.device("default.qubit", wires=3)

    @qml.qnode(dev)
    def cost(p):
        qml.RY(p[0], 0)
        qml.RY(p[1], 1)
        qml.CRX(p[2], wires=[0, 1])
        return qml.expval(qml.Z(1))

    p = pnp.array([0.4, 0.9, 0.7], requires_grad=True)
    ours = surrogate_qfim(cost, p, k=2, mask=False) / 4
    adj = qml.adjoint_metric_tensor(cost)(p)
    mt = qml.metric_tensor(cost, approx=None)(p)
    np.testing.assert_allclose(ours, adj, atol=1e-10)
    assert abs(ours[2, 2] - 0.0096) < 5e-4
    assert abs(mt[2, 2] - ours[2, 2]) > 0.01


def test_pennylane_layouts_and_qng_drop_in(rng):
    """One 2-D argument: shape + shape. Two arguments: a tuple of per-argument blocks. As
    ``metric_tensor_fn`` in ``qml.QNGOptimizer`` (exact, k = n, no mask) the step equals PennyLane's own."""
    dev = qml.device("default.qubit", wires=4)  # a spare wire for qml.metric_tensor's reference

    @qml.qnode(dev)
    def cost(w, x):
        qml.BasicEntanglerLayers(w, wires=[0, 1, 2])
        qml.RY(x[0], 0)
        qml.RX(x[1], 2)
        return qml.expval(qml.Z(0) @ qml.X(2))

    w = pnp.array(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    x = pnp.array(rng.uniform(-1, 1, 2), requires_grad=True)
    blocks = surrogate_qfim(cost, w, x, k=3, mask=False)
    assert isinstance(blocks, tuple) and blocks[0].shape == (2, 3, 2, 3) and blocks[1].shape == (2, 2)
    flat = surrogate_qfim(cost, w, x, k=3, mask=False, flat=True)
    assert flat.shape == (8, 8)
    np.testing.assert_allclose(blocks[0].reshape(6, 6), flat[:6, :6])
    ref = qml.metric_tensor(cost, approx=None)(w, x)
    for b, r in zip(blocks, ref):
        np.testing.assert_allclose(b / 4, r, atol=1e-9)
    ours = qml.QNGOptimizer(stepsize=0.1, lam=0.01).step(cost, w, x,
                                                        metric_tensor_fn=metric_tensor_fn(cost, k=3, shots=None, mask=False))
    theirs = qml.QNGOptimizer(stepsize=0.1, lam=0.01, approx=None).step(cost, w, x)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-8)


def _tfim_cost(dev, n=3):
    ham = qml.spin.transverse_ising("chain", [n], coupling=1.0, h=1.0, boundary_condition=False)

    @qml.qnode(dev)
    def cost(p):
        qml.BasicEntanglerLayers(p, wires=range(n), rotation=qml.RY)
        return qml.expval(ham)

    return cost


def test_ledger_is_honest_on_analytic_devices(rng):
    cost = _tfim_cost(qml.device("default.qubit", wires=3))
    p = pnp.array(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    opt = ShadowQNGOptimizer(stepsize=0.1, k=2, shots=100, seed=0)
    opt.step(cost, p)
    assert not opt.ledger.complete and opt.ledger.uncounted == ["gradient"]
    n_shift = len(qml.gradients.param_shift(qml.workflow.construct_tape(cost)(p))[0])
    assert opt.ledger.by_kind()["gradient"]["circuits"] == n_shift
    opt = ShadowQNGOptimizer(stepsize=0.1, k=2, shots=100, seed=0, grad_shots=50)
    opt.step(cost, p)
    assert opt.ledger.complete
    assert opt.ledger.by_kind()["gradient"]["shots"] == 50 * n_shift
    shot_cost = qml.set_shots(_tfim_cost(qml.device("default.qubit", wires=3)), shots=50)
    opt = ShadowQNGOptimizer(stepsize=0.1, k=2, shots=100, seed=0)
    opt.step(shot_cost, p)
    assert opt.ledger.complete and opt.ledger.by_kind()["gradient"]["shots"] > 0
    with pytest.raises(ValueError, match="grad_shots applies to analytic devices"):
        ShadowQNGOptimizer(k=2, shots=100, grad_shots=50).step(shot_cost, p)
    with pytest.raises(ValueError, match="shots must be 0 when counted=False"):
        ShotLedger().record("gradient", circuits=1, shots=5, counted=False)


@pytest.mark.parametrize("method,circuits", [("grouped", 9), ("state", 1), ("auto", 1)])
def test_snapshots_without_classical_shadow_support(method, circuits):
    """lightning.qubit has no qml.classical_shadow: grouped, one sampled circuit per distinct recipe
    (9 for 2 qubits); state, one simulation with the snapshots drawn from it (auto on an analytic
    simulator). Both estimate ⟨Z0⟩ and ⟨X1⟩ of a known state, and ⟨Z0 Z1⟩ = ⟨Z0⟩⟨Z1⟩ on a product state."""
    ops = [qml.RY(0.8, 0), qml.RY(-1.1, 1)]
    dev = qml.device("lightning.qubit", wires=2)
    with qml.Tracker(dev) as tr:
        bits, recipes = measure_shadow(ops, [0, 1], 4000, dev, seed=1, method=method)
    assert bits.shape == recipes.shape == (4000, 2)
    assert tr.totals["executions"] == circuits
    assert len(np.unique(recipes, axis=0)) == 9
    val = 3 * (1 - 2 * bits.astype(float))
    z0 = np.mean(np.where(recipes[:, 0] == 2, val[:, 0], 0))
    x1 = np.mean(np.where(recipes[:, 1] == 0, val[:, 1], 0))
    zz = np.mean(np.where((recipes[:, 0] == 2) & (recipes[:, 1] == 2), val[:, 0] * val[:, 1], 0))
    assert abs(z0 - np.cos(0.8)) < 0.1 and abs(x1 - np.sin(-1.1)) < 0.1
    assert abs(zz - np.cos(0.8) * np.cos(-1.1)) < 0.25


def test_bad_shadow_method():
    with pytest.raises(ValueError, match="method must be one of"):
        measure_shadow([qml.RX(0.1, 0)], [0], 10, qml.device("default.qubit", wires=1), method="fast")


@pytest.mark.parametrize("kw,err,msg", [({"lam": 0.0}, ValueError, "lam must be > 0"),
                                        ({"lam": -1.0}, ValueError, "lam must be > 0"),
                                        ({"lam": float("nan")}, ValueError, "lam must be finite"),
                                        ({"lam": "0.1"}, TypeError, "lam must be a real number"),
                                        ({"stepsize": float("inf")}, ValueError, "stepsize must be"),
                                        ({"grad_shots": 1}, ValueError, "grad_shots must be >= 2")])
def test_bad_optimizer_settings(kw, err, msg):
    with pytest.raises(err, match=msg):
        ShadowQNGOptimizer(**kw)


def test_bad_parameters(rng):
    cost = _tfim_cost(qml.device("default.qubit", wires=3))
    opt = ShadowQNGOptimizer(stepsize=0.1, k=2, shots=100, seed=0)
    bad = pnp.array(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="params: argument 0 has non-finite entries"):
        opt.step(cost, bad)

    @qml.qnode(qml.device("default.qubit", wires=2))
    def indexed(t):
        qml.RX(t[0], 0)
        qml.RY(t[3], 1)
        return qml.expval(qml.Z(0))

    with pytest.raises(ValueError, match=r"params: the QNode could not be built at arguments of shapes \[\(2,\)\]"):
        opt.step(indexed, pnp.array([0.1, 0.2], requires_grad=True))
