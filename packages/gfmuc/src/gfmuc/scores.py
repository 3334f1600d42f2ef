"""Clustering scores: Hungarian ACC, NMI and ARI (the only code that reads labels)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment


def _labels(y, name: str) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has NaN or inf entries")
    return a


def hungarian_accuracy(y_true, y_pred) -> float:
    """Accuracy after the best one-to-one matching of clusters to classes.

    The confusion matrix ``C[c, k]`` (cluster ``c``, class ``k``) may be rectangular (more or fewer
    clusters than classes); ``scipy.optimize.linear_sum_assignment`` maximises the matched count and the
    unmatched clusters count as errors. Labels may take any values.
    """
    t, p = _labels(y_true, "y_true"), _labels(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true and y_pred differ in length: {t.size} vs {p.size}")
    _, ti = np.unique(t, return_inverse=True)
    _, pi = np.unique(p, return_inverse=True)
    conf = np.zeros((pi.max() + 1, ti.max() + 1), dtype=np.int64)
    np.add.at(conf, (pi, ti), 1)
    rows, cols = linear_sum_assignment(conf, maximize=True)
    return float(conf[rows, cols].sum() / t.size)


def clustering_scores(y_true, y_pred) -> dict:
    """``{"acc", "nmi", "ari"}``: Hungarian accuracy, NMI (arithmetic mean) and ARI (scikit-learn).

    Example:
        >>> clustering_scores([0, 0, 1, 1], [5, 5, 2, 2])
        {'acc': 1.0, 'nmi': 1.0, 'ari': 1.0}
    """
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    acc = hungarian_accuracy(y_true, y_pred)
    t, p = np.asarray(y_true), np.asarray(y_pred)
    return {"acc": acc, "nmi": float(normalized_mutual_info_score(t, p)), "ari": float(adjusted_rand_score(t, p))}
