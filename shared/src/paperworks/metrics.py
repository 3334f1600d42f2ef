"""Thin wrappers over scikit-learn / scipy metrics that validate input the same way.

scikit-learn is imported only by the functions that use it (``pip install paperworks[metrics]``).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as _st


def _pair(y_true, y_pred):
    a, b = np.asarray(y_true), np.asarray(y_pred)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"y_true and y_pred differ in length: {a.shape[0]} vs {b.shape[0]}")
    if a.shape[0] == 0:
        raise ValueError("y_true is empty")
    return a, b


def _sk():
    try:
        from sklearn import metrics
    except ImportError as e:  # pragma: no cover
        raise ImportError("paperworks.metrics needs scikit-learn: pip install 'paperworks[metrics]'") from e
    return metrics


def accuracy(y_true, y_pred) -> float:
    return float(_sk().accuracy_score(*_pair(y_true, y_pred)))


def auroc(y_true, scores) -> float:
    return float(_sk().roc_auc_score(*_pair(y_true, scores)))


def rmse(y_true, y_pred) -> float:
    return float(np.sqrt(_sk().mean_squared_error(*_pair(y_true, y_pred))))


def mae(y_true, y_pred) -> float:
    return float(_sk().mean_absolute_error(*_pair(y_true, y_pred)))


def r2(y_true, y_pred) -> float:
    return float(_sk().r2_score(*_pair(y_true, y_pred)))


def spearman(x, y) -> float:
    return float(_st.spearmanr(*_pair(x, y)).statistic)


def loglog_slope(x, y) -> tuple[float, float]:
    """Least-squares slope of log(y) on log(x) and its standard error."""
    x, y = _pair(x, y)
    if np.any(np.asarray(x) <= 0) or np.any(np.asarray(y) <= 0):
        raise ValueError("loglog_slope needs positive x and y")
    r = _st.linregress(np.log(x), np.log(y))
    return float(r.slope), float(r.stderr)
