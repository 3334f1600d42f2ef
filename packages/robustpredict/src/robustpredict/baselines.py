"""Baselines: RIC-h (Muñoz Medina & Vassilvitskii, NeurIPS 2017) and a fixed shading tuned on
held-out data. FTP lives in :mod:`robustpredict.robust`. No official code of either paper is public;
both are written from their descriptions.
"""

from __future__ import annotations

import numpy as np

from robustpredict.problems import DecisionProblem, PostedPricing, as_predictions
from robustpredict.robust import FollowThePrediction, _states, predict


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


class RICh(FollowThePrediction):
    """RIC-h for posted pricing: cluster contexts by predicted value, one empirical best price per cluster.

    ``k`` clusters are contiguous ranges of ``ŷ`` with equal counts on the held-out data; cluster ``j``
    posts ``r_j = argmax_r Σ_{i ∈ C_j} r·1[v_i >= r]``. ``k`` is chosen from ``ks`` on a random half of
    the held-out data (validated on the other half), then the prices are refit on all of it.

    Muñoz Medina & Vassilvitskii, *Revenue Optimization with Approximate Bid Predictions*, NeurIPS 2017
    (their setting is reserve prices in second-price auctions; here the posted-price special case).
    """

    def __init__(self, predictor, *, ks=(1, 2, 4, 8, 16, 32, 64), seed: int = 0):
        super().__init__(PostedPricing(), predictor)
        ks = [int(k) for k in ks]
        if not ks or min(ks) < 1:
            raise ValueError(f"ks must be a non-empty list of integers >= 1, got {ks}")
        self.ks, self.seed = ks, seed
        self.k_ = self.edges_ = self.prices_ = None

    @staticmethod
    def _fit_k(y_hat, v, k):
        k = max(1, min(k, y_hat.size))
        edges = np.quantile(y_hat, np.linspace(0, 1, k + 1)[1:-1]) if k > 1 else np.empty(0)
        lab = np.searchsorted(edges, y_hat, side="right")
        prices = np.array([best_posted_price(v[lab == j]) if np.any(lab == j) else 0.0 for j in range(k)])
        return edges, prices

    def fit(self, X, y) -> RICh:
        y_hat = self.predict(X)
        v = _states(y, y_hat.size, self.problem)
        a, b = _split(y_hat.size, np.random.default_rng(self.seed))
        scores = []
        for k in self.ks:
            edges, prices = self._fit_k(y_hat[a], v[a], k)
            p = prices[np.searchsorted(edges, y_hat[b], side="right")]
            scores.append(np.mean(self.problem.regret(p, v[b])))
        self.k_ = self.ks[int(np.argmin(scores))]
        self.edges_, self.prices_ = self._fit_k(y_hat, v, self.k_)
        return self

    def act_on(self, y_hat) -> np.ndarray:
        if self.prices_ is None:
            raise RuntimeError("RICh: call fit(X_heldout, y_heldout) first")
        return self.prices_[np.searchsorted(self.edges_, as_predictions(y_hat), side="right")]


class FixedShading(FollowThePrediction):
    """The robust policy's form with a constant shade ``s`` tuned on held-out data.

    ``a = a_s(ŷ)`` (the problem's ε-robust action with ε = s), ``s`` chosen from ``shades`` to
    minimise the held-out mean regret (default grid: 0 and 40 log-spaced values from 1e-4 to 1
    times the held-out state's standard deviation).
    """

    def __init__(self, problem: DecisionProblem, predictor, *, shades=None):
        super().__init__(problem, predictor)
        self.shades = None if shades is None else np.asarray(shades, dtype=float)
        if self.shades is not None and (self.shades.ndim != 1 or np.any(self.shades < 0)):
            raise ValueError("shades must be a 1-D array of values >= 0")
        self.shade_ = None

    def fit(self, X, y) -> FixedShading:
        y_hat = predict(self.predictor, X)
        y = _states(y, y_hat.size, self.problem)
        grid = self.shades
        if grid is None:
            scale = float(np.std(y)) or 1.0
            grid = np.concatenate([[0.0], scale * np.geomspace(1e-4, 1.0, 40)])
        scores = [np.mean(self.problem.regret(self.problem.robust_action(y_hat, s), y)) for s in grid]
        self.shade_ = float(grid[int(np.argmin(scores))])
        return self

    def act_on(self, y_hat) -> np.ndarray:
        if self.shade_ is None:
            raise RuntimeError("FixedShading: call fit(X_heldout, y_heldout) first")
        return self.problem.robust_action(y_hat, self.shade_)
