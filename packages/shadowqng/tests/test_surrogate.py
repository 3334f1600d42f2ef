import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp
from shadowqng import ShadowQNGOptimizer, ShotLedger, natural_direction, propagate_generators, surrogate_qfim
from shadowqng.circuit import StateSimulator, apply_ansatz, circuit_from_tape, hardware_efficient
from shadowqng.pauli import from_codes
from shadowqng.surrogate import build_plan, exact_estimate, shadow_estimate, shadow_values
from shadowqng.vqe import VQEProblem


def _random_qnode(n, circ, wires):
    @qml.qnode(qml.device("default.qubit", wires=wires))
    def cost(t):
        apply_ansatz(circ, t)
        qml.CNOT([0, n - 1])
        qml.Hadamard(1)
        qml.IsingYY(0.7 * t[1], [0, 1])
        qml.RX(t[2], 2)
        return qml.expval(qml.Z(0) @ qml.X(1))

    return cost


@pytest.mark.parametrize("seed", [0])
def test_exact_full_surrogate_is_four_times_metric_tensor(seed):
    n = 3
    circ = hardware_efficient(n, 2)
    cost = _random_qnode(n, circ, n + 1)  # spare wire for the full metric tensor
    theta = pnp.array(np.random.default_rng(seed).uniform(0, 2 * np.pi, circ.n_params), requires_grad=True)
    f = surrogate_qfim(cost, theta, k=n, mask=False)
    ref = qml.metric_tensor(cost, approx=None)(theta)
    assert np.max(np.abs(ref)) > 0.05
    np.testing.assert_allclose(f, 4 * ref, atol=1e-8)


def test_propagated_generators_are_heisenberg_conjugates(rng):
    """K_p = V G V† with V the gates after p: the conjugation order (U†PU vs UPU†) is checked."""
    n = 3
    circ = hardware_efficient(n, 2)
    theta = rng.uniform(-np.pi, np.pi, circ.n_params)
    terms = propagate_generators(circ, theta, k=n)
    sim = StateSimulator(circ)
    psi = sim.states(theta)[0]
    # <ψ|K_p|ψ> from the propagated strings vs  i<ψ|∂_pψ> from derivative states
    d = 0.5 * sim.states(theta[None, :] + np.diag(np.full(circ.n_params, np.pi)))
    for p in range(circ.n_params):
        k_mat = qml.matrix(terms.to_pauli_sentence(p, list(range(n))).operation(), wire_order=range(n))
        np.testing.assert_allclose(k_mat @ psi, 1j * d[p], atol=1e-10)


def test_mask_is_exact_on_product_states(rng):
    n = 3

    @qml.qnode(qml.device("default.qubit", wires=n + 1))
    def cost(t):
        for layer in range(2):
            for q in range(n):
                qml.RY(t[2 * n * layer + q], q)
                qml.RZ(t[2 * n * layer + n + q], q)
        return qml.expval(qml.Z(0))

    theta = pnp.array(rng.uniform(-np.pi, np.pi, 4 * n), requires_grad=True)
    f, info = surrogate_qfim(cost, theta, k=1, mask=True, log=True)
    assert info["mask"].sum() < info["mask"].size  # the mask does drop entries
    np.testing.assert_allclose(f, 4 * qml.metric_tensor(cost, approx=None)(theta), atol=1e-10)


def test_mask_is_not_exact_on_entangled_states(rng):
    pr = VQEProblem("tfim", 4, 2)
    theta = rng.uniform(-np.pi, np.pi, pr.n_params)
    terms = propagate_generators(pr.circ, theta, k=4)
    psi = pr.sim.states(theta[None])[0]
    full = exact_estimate(build_plan(terms, pr.n_params, use_mask=False), psi)
    masked = exact_estimate(build_plan(terms, pr.n_params, use_mask=True), psi)
    assert np.abs(full - masked).max() > 1e-3


def test_truncation_bounds_weight_and_shrinks_active_set(rng):
    circ = hardware_efficient(5, 3)
    theta = rng.uniform(-np.pi, np.pi, circ.n_params)
    actives = []
    for k in (1, 2, 3):
        t = propagate_generators(circ, theta, k)
        assert np.all(np.sum(t.x | t.z, axis=1) <= k)
        actives.append(len(np.unique(t.owner)))
    assert actives[0] <= actives[1] <= actives[2]
    assert actives[0] < circ.n_params


def test_shadow_values_match_pennylane_classical_shadow(rng):
    bits = rng.integers(0, 2, size=(300, 3)).astype(np.int8)
    recipes = rng.integers(0, 3, size=(300, 3)).astype(np.int8)
    shadow = qml.ClassicalShadow(bits, recipes, wire_map=[0, 1, 2])
    words = np.array([[1, 0, 3], [2, 2, 0], [0, 0, 3], [3, 1, 2]])
    x, z = from_codes(words)
    ours = shadow_values(x, z, bits, recipes).mean(axis=1)
    ops = [qml.X(0) @ qml.Z(2), qml.Y(0) @ qml.Y(1), qml.Z(2), qml.Z(0) @ qml.X(1) @ qml.Y(2)]
    theirs = [shadow.expval(o, k=1) for o in ops]
    np.testing.assert_allclose(ours, theirs, atol=1e-10)


def test_shadow_covariance_estimator_is_unbiased(rng):
    """Mean over 200 repetitions of the shadow estimate is within 3σ of the exact surrogate entries."""
    pr = VQEProblem("tfim", 3, 1)
    theta = rng.uniform(-np.pi, np.pi, pr.n_params)
    plan = build_plan(propagate_generators(pr.circ, theta, 2), pr.n_params)
    exact = exact_estimate(plan, pr.sim.states(theta[None])[0])
    reps = np.stack([shadow_estimate(plan, *pr.shadow(theta, 60, rng, ShotLedger()), groups=4, median=False)
                     for _ in range(200)])
    mean, se = reps.mean(axis=0), reps.std(axis=0, ddof=1) / np.sqrt(200)
    retained = plan.mask
    assert retained.sum() >= 4
    z = np.abs(mean - exact)[retained] / np.maximum(se[retained], 1e-12)
    assert np.all(z < 3.5), z.max()  # 3σ per entry, with a little room for many entries
    assert np.mean(z < 3) > 0.9


def test_shadow_estimate_through_pennylane_device(rng):
    n = 3
    circ = hardware_efficient(n, 1)

    @qml.qnode(qml.device("default.qubit", wires=n))
    def cost(t):
        apply_ansatz(circ, t)
        return qml.expval(qml.Z(0))

    theta = pnp.array(rng.uniform(-np.pi, np.pi, circ.n_params), requires_grad=True)
    led = ShotLedger()
    f_shadow = surrogate_qfim(cost, theta, k=2, shots=4000, seed=3, ledger=led)
    f_exact = surrogate_qfim(cost, theta, k=2)
    assert led.shots == 4000
    assert np.abs(f_shadow - f_exact).max() < 0.25
    assert np.abs(f_shadow - f_exact).max() > 0  # it is an estimate


def test_optimizer_equals_qng_with_exact_full_metric(rng):
    n = 3
    circ = hardware_efficient(n, 1)
    ham = qml.spin.transverse_ising("chain", [n], coupling=1.0, h=1.0, boundary_condition=False)

    @qml.qnode(qml.device("default.qubit", wires=n + 1))
    def cost(t):
        apply_ansatz(circ, t)
        return qml.expval(ham)

    theta = pnp.array(rng.uniform(-np.pi, np.pi, circ.n_params), requires_grad=True)
    ours = ShadowQNGOptimizer(stepsize=0.1, k=n, shots=None, lam=0.05, mask=False)
    ref = qml.QNGOptimizer(stepsize=0.1, approx=None, lam=0.05)
    a, ca = ours.step_and_cost(cost, theta)
    b, cb = ref.step_and_cost(cost, theta)
    np.testing.assert_allclose(a, b, atol=1e-8)
    assert np.isclose(ca, cb)


def test_optimizer_inactive_parameters_follow_gradient_descent(rng):
    pr_circ = hardware_efficient(4, 2)
    ham = qml.spin.transverse_ising("chain", [4], coupling=1.0, h=1.0, boundary_condition=False)

    @qml.qnode(qml.device("default.qubit", wires=4))
    def cost(t):
        apply_ansatz(pr_circ, t)
        return qml.expval(ham)

    theta = pnp.array(rng.uniform(-np.pi, np.pi, pr_circ.n_params), requires_grad=True)
    opt = ShadowQNGOptimizer(stepsize=0.1, k=1, shots=200, lam=0.1, seed=0)
    new = opt.step(cost, theta)
    grad = qml.grad(cost)(theta)
    inactive = ~opt.active
    assert 0 < inactive.sum() < len(theta)
    np.testing.assert_allclose((new - theta)[inactive], -0.1 * grad[inactive], atol=1e-12)
    assert opt.ledger.by_kind()["shadow"]["shots"] == 200


def test_natural_direction_projects_and_regularises():
    g = np.array([1.0, 2.0, 3.0])
    metric = np.array([[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 5.0]])
    d = natural_direction(g, metric, np.array([True, True, False]), lam=0.5)
    np.testing.assert_allclose(d, [1.0 / 2.5, 2.0 / 0.5, 3.0])


@pytest.mark.parametrize("kw,err,msg", [({"k": 0}, ValueError, "k must be >= 1"),
                                        ({"k": 1.5}, TypeError, "k must be an int"),
                                        ({"shots": 1}, ValueError, "shots must be >= 2"),
                                        ({"shots": 2.0}, TypeError, "shots must be an integer or None"),
                                        ({"groups": "3"}, TypeError, "groups must be an integer"),
                                        ({"groups": 1}, ValueError, "groups must be >= 2")])
def test_bad_knobs(kw, err, msg, rng):
    circ = hardware_efficient(2, 1)

    @qml.qnode(qml.device("default.qubit", wires=2))
    def cost(t):
        apply_ansatz(circ, t)
        return qml.expval(qml.Z(0))

    with pytest.raises(err, match=msg):
        surrogate_qfim(cost, pnp.array(rng.uniform(size=4), requires_grad=True), **kw)
    with pytest.raises(err, match=msg):
        ShadowQNGOptimizer(**kw)


def test_bad_cost_and_params(rng):
    circ = hardware_efficient(2, 1)
    theta = pnp.array(rng.uniform(size=4), requires_grad=True)
    with pytest.raises(TypeError, match="cost must be a PennyLane QNode"):
        ShadowQNGOptimizer().step(lambda t: 0.0, theta)

    @qml.qnode(qml.device("default.qubit", wires=2))
    def probs(t):
        apply_ansatz(circ, t)
        return qml.probs()

    with pytest.raises(TypeError, match="single qml.expval"):
        surrogate_qfim(probs, theta)
    with pytest.raises(ValueError, match="params must have shape"):
        propagate_generators(circ, np.zeros(3), 1)

    class Opaque(qml.operation.Operation):  # no matrix, no generator, no decomposition
        num_wires = 1
        num_params = 0

    @qml.qnode(qml.device("default.qubit", wires=2))
    def opaque(t):
        qml.RY(t[0], 0)
        Opaque(wires=0)
        return qml.expval(qml.Z(0))

    with pytest.raises(ValueError, match="neither a Pauli rotation nor a Clifford"):
        surrogate_qfim(opaque, theta)


def test_circuit_from_tape_parameters_in_order(rng):
    tape = qml.tape.QuantumScript([qml.RY(0.1, 0), qml.RZ(0.2, 0)], [qml.expval(qml.Z(0))])
    assert circuit_from_tape(tape).n_params == 2


def test_lightning_device_plugs_in(rng):
    """lightning.qubit rejects qml.classical_shadow: the per-snapshot sampling fallback is used."""
    pytest.importorskip("pennylane_lightning")
    n = 3
    circ = hardware_efficient(n, 1)
    theta = pnp.array(rng.uniform(-np.pi, np.pi, circ.n_params), requires_grad=True)
    out = {}
    for name in ("lightning.qubit", "default.qubit"):
        @qml.qnode(qml.device(name, wires=n))
        def cost(t):
            apply_ansatz(circ, t)
            return qml.expval(qml.Z(0) @ qml.Z(1))

        led = ShotLedger()
        out[name] = surrogate_qfim(cost, theta, k=2, shots=1500, seed=2, ledger=led)
        assert led.shots == 1500
    exact = surrogate_qfim(cost, theta, k=2)
    for f in out.values():
        assert np.abs(f - exact).max() < 0.3
