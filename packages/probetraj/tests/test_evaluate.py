import numpy as np
import pytest
from probetraj import PooledProbe, planted_hmm
from probetraj.evaluate import auroc, bootstrap_auroc, grouped_folds, out_of_fold, outcome_classifier, tpr_at_fpr
from sklearn.metrics import roc_auc_score


def test_auroc_equals_sklearn_with_ties(rng):
    y = rng.integers(0, 2, 200)
    s = rng.integers(0, 5, 200).astype(float)
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert np.isnan(auroc(np.zeros(5), np.arange(5)))


def test_tpr_at_fpr_brute_force(rng):
    y = rng.integers(0, 2, 300)
    s = rng.normal(size=300) + y
    best = 0.0
    for t in np.unique(s):
        fpr = np.mean(s[y == 0] >= t)
        if fpr <= 0.05:
            best = max(best, np.mean(s[y == 1] >= t))
    assert tpr_at_fpr(y, s) == pytest.approx(best)


def test_folds_never_share_a_prompt_and_bad_groups_fail(rng):
    y = rng.integers(0, 2, 100)
    g = np.repeat(np.arange(20), 5)
    for tr, te in grouped_folds(y, g, n_splits=5):
        assert not set(g[tr]) & set(g[te])
    with pytest.raises(ValueError, match="groups: cross-validation must be grouped"):
        grouped_folds(y, None)
    with pytest.raises(ValueError, match="one-class"):
        grouped_folds(np.ones(100), g)
    with pytest.raises(ValueError, match="one id per rollout"):
        grouped_folds(y, g[:50])


def test_planted_hmm_trajectory_separates_while_t0_is_chance():
    H, y, g = planted_hmm(240, T=30, d=8, separation=1.5, seed=0)
    Htr, ytr, _ = planted_hmm(240, T=30, d=8, separation=1.5, seed=1)
    probe = PooledProbe(pooling="last").fit(Htr, ytr)
    trajs = probe.trajectories(H)
    s = out_of_fold(outcome_classifier(), trajs, y, grouped_folds(y, g, seed=0))
    assert auroc(y, s) > 0.8
    s0 = np.array([t[0] for t in trajs])
    lo, hi = bootstrap_auroc(y, s0, g, n=300, seed=0)
    assert lo < 0.5 < hi
