"""Signal-processing features of a probe trajectory (volatility, trend, steady state).

For a trajectory ``p = (p_1..p_T)`` in [0, 1] (the CoT only, stopped before ``</think>``):

====================  =====================================================================
``mean``              ``mean_t p_t``
``std``               population standard deviation of ``p``
``diff_std``          std of the first difference ``p_{t+1} - p_t`` (volatility; 0 if T < 2)
``slope``             OLS slope of ``p`` on normalised time ``u_t = (t-1)/(T-1)`` (trend; 0 if T < 2)
``last20_mean``       mean of the last ``ceil(0.2 T)`` values (steady state)
``final``             ``p_T``
``max``               ``max_t p_t``
``crossings``         number of sign changes of ``p_t - 0.5`` (a value exactly 0.5 counts as above)
``settling``          the fraction of the CoT before the trajectory stays within ``band`` of ``p_T``:
                      ``(t* - 1) / T`` with ``t*`` the first index from which ``|p_s - p_T| <= band``
====================  =====================================================================

The list follows the abstract's "volatility, trend, and steady-state"; the exact set and the band
(0.1) are ours (inferred).
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from paperworks import check_float

FEATURES = ("mean", "std", "diff_std", "slope", "last20_mean", "final", "max", "crossings", "settling")


def as_trajectories(X, name: str = "X") -> list[np.ndarray]:
    """Validate a ragged list of 1-D trajectories in [0, 1] (a 2-D array is a list of its rows)."""
    if isinstance(X, str | bytes) or not hasattr(X, "__len__") or len(X) == 0:
        raise ValueError(f"{name} must be a non-empty list of 1-D trajectories")
    if isinstance(X, np.ndarray) and X.ndim == 2:
        X = list(X)
    out = []
    for i, p in enumerate(X):
        try:
            p = np.asarray(p, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}[{i}] must be a numeric 1-D array") from None
        if p.ndim != 1 or p.size == 0:
            raise ValueError(f"{name}[{i}] must be a non-empty 1-D trajectory, got shape {p.shape}")
        if not np.all(np.isfinite(p)):
            raise ValueError(f"{name}[{i}] has NaN or inf values")
        if p.min() < 0 or p.max() > 1:
            raise ValueError(f"{name}[{i}] must hold probabilities in [0, 1]")
        out.append(p)
    return out


def trajectory_features(p, *, band: float = 0.1) -> np.ndarray:
    """The :data:`FEATURES` of one trajectory ``p`` ``(T,)`` → ``(9,)`` (unstandardised)."""
    p = as_trajectories([p], "p")[0]
    T = len(p)
    if T > 1:
        u = np.linspace(0.0, 1.0, T)
        uc = u - u.mean()
        slope = float(uc @ (p - p.mean()) / (uc @ uc))
        diff_std = float(np.diff(p).std())
    else:
        slope = diff_std = 0.0
    k = math.ceil(0.2 * T)
    above = p >= 0.5
    crossings = int(np.count_nonzero(above[1:] != above[:-1]))
    off = np.abs(p - p[-1]) > band
    settle = 0 if not off.any() else int(np.nonzero(off)[0][-1]) + 1
    return np.array([p.mean(), p.std(), diff_std, slope, p[-k:].mean(), p[-1], p.max(), crossings, settle / T])


class TrajectoryFeatures(TransformerMixin, BaseEstimator):
    """Ragged list of trajectories → ``(n, 9)`` feature matrix (a scikit-learn transformer).

    Args:
        band: the settling band around the final value.
        features: a subset of :data:`FEATURES` to keep (default all, in that order).

    Example::

        clf = make_pipeline(TrajectoryFeatures(), StandardScaler(), LogisticRegression())
        cross_val_score(clf, trajectories, y, groups=prompt_ids, cv=GroupKFold(5), scoring="roc_auc")
    """

    def __init__(self, band: float = 0.1, features: tuple[str, ...] | None = None):
        self.band = band
        self.features = features

    def _cols(self) -> list[int]:
        check_float(self.band, "band", minimum=0.0, maximum=1.0)
        if self.features is None:
            return list(range(len(FEATURES)))
        if isinstance(self.features, str) or not len(self.features):
            raise ValueError(f"features must be a non-empty list of names from {FEATURES}")
        bad = [f for f in self.features if f not in FEATURES]
        if bad:
            raise ValueError(f"features: unknown {bad}; known {FEATURES}")
        return [FEATURES.index(f) for f in self.features]

    def fit(self, X, y=None):
        cols = self._cols()
        as_trajectories(X)
        self.n_features_out_ = len(cols)
        return self

    def transform(self, X) -> np.ndarray:
        cols = self._cols()
        X = as_trajectories(X)
        return np.stack([trajectory_features(p, band=self.band) for p in X])[:, cols]

    def get_feature_names_out(self, input_features=None):
        return np.array([FEATURES[c] for c in self._cols()], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        return tags


class OnlineFeatures:
    """The :data:`FEATURES` kept up to date one score at a time (for live monitoring).

    ``update(p)`` is O(1) except ``settling`` and ``last20_mean``, which :meth:`value` computes from
    the stored trajectory; :meth:`value` equals :func:`trajectory_features` of the scores so far.
    """

    def __init__(self, band: float = 0.1):
        self.band = band
        self.p: list[float] = []
        self.sum = self.sumsq = self.tsum = self.tpsum = 0.0
        self.dsum = self.dsumsq = 0.0
        self.max = -np.inf
        self.crossings = 0

    def update(self, p: float) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"trajectory values must be probabilities in [0, 1], got {p!r}")
        t = len(self.p)
        if t:
            d = p - self.p[-1]
            self.dsum += d
            self.dsumsq += d * d
            self.crossings += int((p >= 0.5) != (self.p[-1] >= 0.5))
        self.p.append(p)
        self.sum += p
        self.sumsq += p * p
        self.tsum += t
        self.tpsum += t * p
        self.max = max(self.max, p)

    def value(self) -> np.ndarray:
        T = len(self.p)
        if not T:
            raise ValueError("no scores yet")
        mean = self.sum / T
        std = math.sqrt(max(self.sumsq / T - mean * mean, 0.0))
        if T > 1:
            n = T - 1
            dm = self.dsum / n
            diff_std = math.sqrt(max(self.dsumsq / n - dm * dm, 0.0))
            tm = self.tsum / T
            stt = (T * (T * T - 1)) / 12.0  # Σ (t - tm)² for t = 0..T-1
            slope = (self.tpsum - T * tm * mean) / stt * (T - 1)  # per unit normalised time
        else:
            diff_std = slope = 0.0
        k = math.ceil(0.2 * T)
        last = self.p[-1]
        settle = 0
        for i in range(T - 1, -1, -1):
            if abs(self.p[i] - last) > self.band:
                settle = i + 1
                break
        return np.array(
            [mean, std, diff_std, slope, float(np.mean(self.p[-k:])), last, self.max, self.crossings, settle / T]
        )
