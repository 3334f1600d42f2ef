import numpy as np
import pytest
from tcgap import NCM, SLDA, TaskHeadCE, fit_slope, gamma_min, tc_gap
from tcgap.data import gaussian_tasks, split_tasks

from paperworks import binomial_ci


def test_bound_holds_where_it_is_a_theorem():
    """Two Gaussian classes in two tasks (one class each), LDA: the gap is the Bayes-like error Φ(−Δ/2) ≤ exp(−Δ²/8)."""
    rng = np.random.default_rng(5)
    for delta in (1.5, 3.0, 4.0):
        X = np.r_[rng.normal(size=(6000, 3)), rng.normal(size=(6000, 3)) + [delta, 0, 0]]
        y = np.repeat([0, 1], 6000)
        t = np.array([0, 1])
        idx = rng.permutation(len(y))
        tr, ga, te = np.split(idx, [4000, 8000])
        g = gamma_min(X[ga], y[ga], t)
        out = tc_gap(SLDA(), split_tasks(X[tr], y[tr], t), split_tasks(X[te], y[te], t), reading="task_il",
                     gamma_data=(X[ga], y[ga]))
        ci = binomial_ci(out["n_confused"], out["n_test"])
        assert out["gamma_min"] == g and out["bound"] == pytest.approx(np.exp(-g / 8))
        assert ci.upper <= out["bound"], (delta, ci, out["bound"])
        assert out["reference_risk"] == 0.0  # one class per task: task-IL cannot err


def test_ncm_joint_gap_is_zero_and_ce_is_not(gauss):
    out = tc_gap(NCM(), gauss["train"], gauss["test"])
    assert out["gap"] == 0.0 and out["n_confused"] == out["n_rescued"] == 0
    ce = tc_gap(TaskHeadCE(), gauss["train"], gauss["test"], reading="joint")
    assert ce["gap"] > 0.02


def test_task_il_gap_is_a_count_of_confusions(gauss):
    out = tc_gap(SLDA(), gauss["train"], gauss["test"], reading="task_il")
    assert out["n_rescued"] == 0
    assert out["gap"] == pytest.approx(out["n_confused"] / out["n_test"])


def test_smoke_gap_decreases_with_gamma_and_slope_negative():
    """The brief's smoke: Gaussians at 3 γ levels, NCM and LDA under (b), CE heads under (a)."""
    gammas, gaps = [], {"ncm": [], "slda": [], "ce": []}
    for level in (2.0, 8.0, 16.0):
        gen = gaussian_tasks(np.random.default_rng(int(level)), gamma=level, d=12, within=3.0)
        t = gen["task_of_class"]
        tr, ga, te = gen["sample"](100), gen["sample"](100), gen["sample"](400)
        trt, tet = split_tasks(*tr, t), split_tasks(*te, t)
        gammas.append(gamma_min(*ga, t))
        gaps["ncm"].append(tc_gap(NCM(), trt, tet, reading="task_il")["gap"])
        gaps["slda"].append(tc_gap(SLDA(), trt, tet, reading="task_il")["gap"])
        gaps["ce"].append(tc_gap(TaskHeadCE(n_steps=100), trt, tet, reading="joint")["gap"])
    for name in ("ncm", "slda"):
        assert gaps[name][0] > gaps[name][1] > gaps[name][2] > 0, (name, gaps[name])
        assert fit_slope(gammas, gaps[name], n_boot=200, seed=0)[0] < 0
    assert all(g > 0 for g in gaps["ce"])  # per-task CE heads: task confusion a joint head does not have


def test_fit_slope_recovers_planted_slope_with_coverage():
    rng = np.random.default_rng(0)
    slope, covered = -0.2, 0
    for rep in range(40):
        g = rng.uniform(0, 30, 40)
        gap = np.exp(0.3 + slope * g + rng.normal(0, 0.4, g.size))
        s, (lo, hi) = fit_slope(g, gap, n_boot=400, seed=rep)
        covered += lo <= slope <= hi
        assert lo <= s <= hi
    assert covered >= 33  # nominal 95% of 40 = 38; binomial slack


def test_fit_slope_bad_input():
    with pytest.raises(ValueError, match="gaps must be > 0"):
        fit_slope([1, 2, 3], [0.1, 0.0, 0.2])
    with pytest.raises(ValueError, match="at least 3"):
        fit_slope([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="all be equal"):
        fit_slope([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="finite"):
        fit_slope([1, np.nan, 3], [0.1, 0.2, 0.3])
    with pytest.raises(TypeError, match="n_boot"):
        fit_slope([1, 2, 3], [0.1, 0.2, 0.3], n_boot=10.5)


def test_tc_gap_bad_input(gauss):
    tr, te = gauss["train"], gauss["test"]
    with pytest.raises(ValueError, match="empty task"):
        tc_gap(NCM(), [tr[0], (np.empty((0, 12)), np.empty(0))], te[:2])
    with pytest.raises(ValueError, match="already appear in an earlier task"):
        tc_gap(NCM(), [tr[0], tr[0]], te[:2])
    with pytest.raises(ValueError, match="reading"):
        tc_gap(NCM(), tr, te, reading="both")
    with pytest.raises(ValueError, match="non-finite"):
        tc_gap(NCM(), [(np.full_like(tr[0][0], np.inf), tr[0][1]), tr[1]], te[:2])
    Xte = np.concatenate([X for X, _ in te])
    yte = np.concatenate([y for _, y in te])
    with pytest.raises(ValueError, match="circular"):
        tc_gap(NCM(), tr, te, gamma_data=(Xte[:500], yte[:500]))
    with pytest.raises(ValueError, match="at least two"):
        tc_gap(NCM(), tr[:1], te[:1])
    with pytest.raises(TypeError, match="class-IL learner"):
        from sklearn.linear_model import LogisticRegression

        tc_gap(LogisticRegression(), tr, te)
