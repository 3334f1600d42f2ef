"""Outcome prediction with cross-validation grouped by prompt, and its metrics (AUROC, TPR@FPR, CIs)."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_curve
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from probetraj.features import TrajectoryFeatures


def outcome_classifier(features=None, C: float = 1.0):
    """``TrajectoryFeatures → StandardScaler → LogisticRegression``: the trajectory monitor."""
    return make_pipeline(
        TrajectoryFeatures(features=features), StandardScaler(), LogisticRegression(C=C, max_iter=1000)
    )


def _check_labels(y, groups):
    y = np.asarray(y)
    if len(np.unique(y)) != 2:
        raise ValueError(
            f"y must hold two classes to evaluate a monitor, got {np.unique(y).tolist()} (one-class labels)"
        )
    if groups is None:
        raise ValueError("groups: cross-validation must be grouped by prompt; pass one group id per rollout")
    groups = np.asarray(groups)
    if len(groups) != len(y):
        raise ValueError(f"groups must have one id per rollout ({len(y)}), got {len(groups)}")
    return y, groups


def grouped_folds(y, groups, *, n_splits: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """GroupKFold splits (shuffled by ``seed``): no prompt is in both the train and test side."""
    y, groups = _check_labels(y, groups)
    if len(np.unique(groups)) < n_splits:
        raise ValueError(f"groups: need at least n_splits={n_splits} distinct prompts, got {len(np.unique(groups))}")
    cv = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return list(cv.split(np.zeros(len(y)), y, groups))


def out_of_fold(estimator, X, y, folds) -> np.ndarray:
    """Out-of-fold P(class 1) of a scikit-learn estimator over the given folds (``X`` may be a list)."""
    from sklearn.base import clone

    y = np.asarray(y)
    out = np.full(len(y), np.nan)
    for tr, te in folds:
        est = clone(estimator).fit([X[i] for i in tr], y[tr])
        out[te] = est.predict_proba([X[i] for i in te])[:, 1]
    return out


def auroc(y, s) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney) identity, ties counted half
    (equals :func:`sklearn.metrics.roc_auc_score`); NaN with one class."""
    y = np.asarray(y).astype(bool)
    n1 = int(y.sum())
    n0 = len(y) - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(np.asarray(s, dtype=float))
    return float((r[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def tpr_at_fpr(y, s, fpr: float = 0.05) -> float:
    """The highest true-positive rate at a false-positive rate ≤ ``fpr``."""
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        return float("nan")
    f, t, _ = roc_curve(y, s)
    return float(t[f <= fpr + 1e-12].max())


def bootstrap_auroc(y, s, groups, *, n: int = 500, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the AUROC under a bootstrap that resamples prompts (clusters)."""
    y, s, groups = np.asarray(y), np.asarray(s), np.asarray(groups)
    rng = np.random.default_rng(seed)
    uniq, inv = np.unique(groups, return_inverse=True)
    members = [np.nonzero(inv == k)[0] for k in range(len(uniq))]
    vals = []
    for _ in range(n):
        idx = np.concatenate([members[k] for k in rng.integers(len(uniq), size=len(uniq))])
        a = auroc(y[idx], s[idx])
        if np.isfinite(a):
            vals.append(a)
    a = (1 - level) / 2
    return float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a))
