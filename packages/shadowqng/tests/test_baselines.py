import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp
from shadowqng.baselines import METHODS, Trainer, block_diag_metric, exact_qfim, parametrized_layers, rng_fisher
from shadowqng.circuit import apply_ansatz
from shadowqng.ledger import ShotLedger
from shadowqng.vqe import VQEProblem


@pytest.fixture(scope="module")
def problem():
    return VQEProblem("tfim", 3, 2)


@pytest.fixture(scope="module")
def qnode(problem):
    @qml.qnode(qml.device("default.qubit", wires=problem.n + 1))
    def cost(t):
        apply_ansatz(problem.circ, t)
        return qml.expval(problem.hamiltonian)

    return cost


def test_layers_of_the_ansatz(problem):
    layers = parametrized_layers(problem)
    assert len(layers) == 2 * problem.layers
    assert sorted(p for _, ps in layers for p in ps) == list(range(problem.n_params))


def test_exact_block_diag_matches_pennylane(problem, qnode, rng):
    theta = rng.uniform(-np.pi, np.pi, problem.n_params)
    ref = qml.metric_tensor(qnode, approx="block-diag")(pnp.array(theta, requires_grad=True))
    np.testing.assert_allclose(block_diag_metric(problem, theta, None, None, None), ref, atol=1e-12)


def test_finite_shot_block_diag_converges(problem, rng):
    theta = rng.uniform(-np.pi, np.pi, problem.n_params)
    exact = block_diag_metric(problem, theta, None, None, None)
    led = ShotLedger()
    est = block_diag_metric(problem, theta, 20000, rng, led)
    assert np.abs(est - exact).max() < 0.02
    assert led.by_kind()["metric"] == {"circuits": 2 * problem.layers, "shots": 2 * problem.layers * 20000}


def test_exact_qfim_and_gradient_match_pennylane(problem, qnode, rng):
    theta = rng.uniform(-np.pi, np.pi, problem.n_params)
    t = pnp.array(theta, requires_grad=True)
    np.testing.assert_allclose(exact_qfim(problem, theta), 4 * qml.metric_tensor(qnode, approx=None)(t), atol=1e-10)
    np.testing.assert_allclose(problem.exact_gradient(theta), qml.grad(qnode)(t), atol=1e-10)


def test_classical_fisher_is_bounded_by_qfim(problem, rng):
    """In the many-shot limit the RNG metric (CFIM/4) is PSD and below the Fubini–Study metric."""
    theta = rng.uniform(-np.pi, np.pi, problem.n_params)
    led = ShotLedger()
    f = rng_fisher(problem, theta, 200000, rng, led)
    fs = exact_qfim(problem, theta) / 4
    assert np.linalg.eigvalsh(f).min() > -1e-9
    assert np.linalg.eigvalsh(fs - f).min() > -0.02
    assert led.by_kind()["rng"]["circuits"] == 2 * problem.n_params + 1


def test_sampled_gradient_is_unbiased(problem, rng):
    theta = rng.uniform(-np.pi, np.pi, problem.n_params)
    g = np.stack([problem.sampled_gradient(theta, 40, rng, ShotLedger()) for _ in range(300)])
    se = g.std(axis=0, ddof=1) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - problem.exact_gradient(theta)) < 4 * se + 1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_spends_the_budget_and_improves(problem, method):
    tr = Trainer(problem, method, 0.1, shots=200, snapshots=200, k=2, lam=0.1, seed=1)
    out = tr.run(40000)
    assert out["shots"][-1] >= 40000
    assert out["shots"][-2] < 40000  # stops at the first step past the budget
    assert np.all(np.diff(out["shots"]) > 0)
    assert out["error"][-1] < out["error"][0] or method == "rng"


def test_trainer_rejects_unknown_method(problem):
    with pytest.raises(ValueError, match="method must be one of"):
        Trainer(problem, "lbfgs", 0.1, shots=10)
