"""The per-shot study: every arm through its PennyLane optimizer, one ledger, tuning that brackets."""

import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp
from shadowqng.baselines import block_diag_metric, exact_qfim
from shadowqng.ledger import ShotLedger
from shadowqng.study import (
    QNodeProblem,
    Runner,
    SampledGradient,
    _extend,
    arm_names,
    rng_metric_fn,
    run_arm,
    tracked_metric_fn,
    tune_all,
)


@pytest.fixture(scope="module")
def problem():
    return QNodeProblem("xxz", 3, 1, 48)


def test_sampled_gradient_is_parameter_shift_at_finite_shots_and_charged():
    pr = QNodeProblem("xxz", 3, 1, 30000)
    th = pr.theta0(0)
    grad_q, *_ = pr.devices(1)
    led = ShotLedger()
    g = SampledGradient(pr, grad_q, led)(th)
    ref = qml.grad(pr.cost)(pnp.array(th, requires_grad=True))  # PennyLane's exact gradient
    assert np.allclose(g, ref, atol=0.1) and not np.allclose(g, ref, atol=1e-6)  # sampled, not exact
    assert led.by_kind()["gradient"] == {"circuits": 2 * pr.P * pr.G, "shots": 2 * pr.P * pr.G * pr.per}


def test_block_diag_metric_at_shots_is_pennylanes_and_counted():
    pr = QNodeProblem("tfim", 3, 2, 20000)
    th = pnp.array(pr.theta0(2), requires_grad=True)
    _, metric_q, _, dev = pr.devices(3)
    led = ShotLedger()
    m = tracked_metric_fn(qml.metric_tensor(metric_q, approx="block-diag"), dev, led)(th)
    exact = qml.metric_tensor(pr.cost, approx="block-diag")(th)
    assert np.allclose(exact, block_diag_metric(pr.exact, np.asarray(th), None, None, None), atol=1e-12)
    assert np.allclose(m, exact, atol=0.03) and not np.allclose(m, exact, atol=1e-6)
    assert led.by_kind()["metric"] == {"circuits": 2 * pr.layers, "shots": 2 * pr.layers * pr.shots}


def test_rng_metric_is_a_classical_fisher_below_the_qfim():
    pr = QNodeProblem("tfim", 3, 1, 200000)
    _, _, probs_q, _ = pr.devices(0)
    th = pr.theta0(1)
    led = ShotLedger()
    f = rng_metric_fn(pr, probs_q, np.random.default_rng(0), led)(th)
    q = exact_qfim(pr.exact, th) / 4
    assert np.allclose(f, f.T) and np.linalg.eigvalsh(f).min() > -1e-9
    assert np.linalg.eigvalsh(q - f).min() > -0.02  # classical Fisher <= QFIM, up to sampling
    assert led.by_kind()["rng"]["circuits"] == 2 * pr.P + 1


@pytest.mark.parametrize("arm", arm_names([1, "n"]))
def test_every_arm_spends_the_budget_on_one_ledger(problem, arm):
    c = run_arm(problem, arm, 0.1, 0.1, seed=0, budget=1500, snapshots=60)
    assert c["shots"][-1] >= 1500 and c["shots"][-2] < 1500  # stops at the first step past the budget
    assert np.all(np.diff(c["shots"]) > 0) and np.isfinite(c["error"]).all()
    per_step = 2 * problem.P * problem.G * problem.per
    assert c["ledger"]["gradient"]["shots"] == c["steps"] * per_step
    if arm.startswith("shadowqng"):
        assert c["ledger"]["shadow"]["shots"] == c["steps"] * 60


def test_arms_share_the_initial_state_per_seed(problem):
    a = run_arm(problem, "sgd", 0.1, None, seed=4, budget=300)
    b = run_arm(problem, "shadowqng_k2", 0.1, 0.1, seed=4, budget=300, snapshots=60)
    assert a["error"][0] == b["error"][0]
    with pytest.raises(ValueError, match="unknown arm"):
        run_arm(problem, "lbfgs", 0.1, None, seed=0, budget=300)


def test_grid_extends_at_an_edge_and_reports_bracketing():
    assert _extend([0.1, 0.3, 0.9], 0.1) == pytest.approx(0.1 / 3)
    assert _extend([0.1, 0.3, 0.9], 0.9) == pytest.approx(2.7)
    assert _extend([0.1, 0.3, 0.9], 0.3) is None
    key = ("tfim", 3, 1, 48)
    # SGD on this tiny chain wants a larger rate than 1e-3: the best sits on the upper edge, so the grid grows
    out = tune_all([(key, "sgd")], [1e-4, 1e-3], [0.1], [1000], 600, snapshots=50, groups=5, max_extend=2,
                   runner=Runner(1))[(key, "sgd")]
    assert out["extensions"]["lr"] == 2 and len(out["lrs"]) == 4 and out["lrs"][-1] == pytest.approx(0.1)
    assert out["lam"] is None and out["bracketed"] == {"lr": out["lr"] not in (out["lrs"][0], out["lrs"][-1])}
