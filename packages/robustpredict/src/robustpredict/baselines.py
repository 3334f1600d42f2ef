"""Baselines: RIC-h (Muñoz Medina & Vassilvitskii, NeurIPS 2017) and a fixed shading tuned on
held-out data. FTP lives in :mod:`robustpredict.robust`. No official code of either paper is public;
both are written from their descriptions.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.exceptions import NotFittedError

from robustpredict.problems import DecisionProblem, PostedPricing, as_predictions
from robustpredict.robust import _as_given, _Policy, predict, shade_grid


def best_posted_price(values) -> float:
    """Empirical revenue-maximising posted price ``argmax_r r·#{v >= r}`` (attained at a value)."""
    v = np.sort(as_predictions(values, "values"))[::-1]
    if v.size == 0:
        return 0.0
    rev = v * np.arange(1, v.size + 1)
    return float(max(v[int(np.argmax(rev))], 0.0))


def _split(n: int, rng: np.random.Generator):
    idx = rng.permutation(n)
    return idx[: n // 2], idx[n // 2:]


class RICh(_Policy):
    """RIC-h for posted pricing: cluster contexts by predicted value, one empirical best price per cluster.

    ``k`` clusters are contiguous ranges of ``ŷ`` with equal counts on the held-out data; cluster ``j``
    posts ``r_j = argmax_r Σ_{i ∈ C_j} r·1[v_i >= r]``. ``k`` is chosen from ``ks`` on a random half of
    the held-out data (validated on the other half), then the prices are refit on all of it.

    Muñoz Medina & Vassilvitskii, *Revenue Optimization with Approximate Bid Predictions*, NeurIPS 2017
    (their setting is reserve prices in second-price auctions; here the posted-price special case).
    A scikit-learn estimator like the policies (``predict`` = prices, ``score`` = −mean regret).
    """

    def __init__(self, predictor, *, ks=(1, 2, 4, 8, 16, 32, 64, 128, 256), seed: int = 0):
        self.predictor = predictor
        self.ks = ks
        self.seed = seed
        self._validate_params()

    @property
    def problem(self) -> PostedPricing:
        return PostedPricing()

    def _validate_params(self) -> None:
        self._validate_common()
        ks = list(self.ks) if not isinstance(self.ks, (str, bytes)) else None
        if not ks or any(isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 for k in ks):
            raise ValueError(f"ks must be a non-empty list of integers >= 1, got {self.ks!r}")

    @staticmethod
    def _fit_k(y_hat, v, k):
        k = max(1, min(k, y_hat.size))
        edges = np.quantile(y_hat, np.linspace(0, 1, k + 1)[1:-1]) if k > 1 else np.empty(0)
        lab = np.searchsorted(edges, y_hat, side="right")
        prices = np.array([best_posted_price(v[lab == j]) if np.any(lab == j) else 0.0 for j in range(k)])
        return edges, prices

    def fit(self, X, y) -> RICh:
        self._validate_params()
        Xc, v = self._Xy(X, y)
        y_hat = predict(self.predictor, _as_given(X, Xc))
        a, b = _split(y_hat.size, np.random.default_rng(self.seed))
        ks = [int(k) for k in self.ks]
        scores = []
        for k in ks:
            edges, prices = self._fit_k(y_hat[a], v[a], k)
            p = prices[np.searchsorted(edges, y_hat[b], side="right")]
            scores.append(np.mean(self.problem.regret(p, v[b])))
        self.scores_ = np.asarray(scores)
        self.k_ = ks[int(np.argmin(scores))]
        self.edges_, self.prices_ = self._fit_k(y_hat, v, self.k_)
        return self

    def act_on(self, y_hat) -> np.ndarray:
        if not hasattr(self, "prices_"):
            raise NotFittedError("RICh: call fit(X_heldout, y_heldout) first")
        return self.prices_[np.searchsorted(self.edges_, as_predictions(y_hat), side="right")]


class FixedShading(_Policy):
    """The robust policy's form with a constant shade ``s`` tuned on held-out data.

    ``a = a_s(ŷ)`` (the problem's ε-robust action with ε = s), ``s`` chosen from ``shades`` to
    minimise the held-out mean regret (default grid :func:`~robustpredict.robust.shade_grid`: 0 and
    40 log-spaced values from 1e-4 to 1 times the held-out states' standard deviation; the same
    grid and data as ``RobustPolicy(epsilon="cv")``).
    """

    def __init__(self, problem: DecisionProblem, predictor, *, shades=None):
        self.problem = problem
        self.predictor = predictor
        self.shades = shades
        self._validate_params()

    def _validate_params(self) -> None:
        self._validate_common()
        if self.shades is not None:
            g = np.asarray(self.shades, dtype=float)
            if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)) or np.any(g < 0):
                raise ValueError("shades must be a non-empty 1-D array of finite values >= 0")

    def fit(self, X, y) -> FixedShading:
        self._validate_params()
        Xc, y = self._Xy(X, y)
        y_hat = predict(self.predictor, _as_given(X, Xc))
        grid = shade_grid(y) if self.shades is None else np.asarray(self.shades, dtype=float)
        self.scores_ = np.array([np.mean(self.problem.regret(self.problem.robust_action(y_hat, s), y)) for s in grid])
        self.shade_ = float(grid[int(np.argmin(self.scores_))])
        return self

    def act_on(self, y_hat) -> np.ndarray:
        if not hasattr(self, "shade_"):
            raise NotFittedError("FixedShading: call fit(X_heldout, y_heldout) first")
        return self.problem.robust_action(y_hat, self.shade_)
