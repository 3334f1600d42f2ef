"""Synthetic contextual data: ``x ~ N(0, I_d)``, ``y = f(x) + ξ``.

* ``f`` linear, ``mean + spread·(w·x)/|w|``, or a small nonlinear one of the same mean and scale;
  both clipped below at ``mean/10`` (an event of probability < 1e-5 at the defaults) so that
  prices, season lengths and resale values stay positive.
* ``ξ``: Gaussian of standard deviation η, Student-t with 3 degrees of freedom scaled to standard
  deviation η (heavy tails: errors that leave any ball now and then), or the paper's counterexample,
  symmetric ``±η`` (two-point). Then ``f(x) = E[y | x]`` is the minimum-variance (Bayes, MSE-optimal) predictor of
  ``y`` and its RMSE is exactly η: an honest, unbiased predictor with calibrated error.
"""

from __future__ import annotations

import numpy as np

NOISES = ("gaussian", "student_t", "two_point")
STUDENT_DF = 3.0
FUNCTIONS = ("linear", "nonlinear")


def make_contexts(rng: np.random.Generator, n: int, d: int = 10) -> np.ndarray:
    if int(n) < 1 or int(d) < 1:
        raise ValueError(f"n and d must be >= 1, got n={n}, d={d}")
    return rng.standard_normal((int(n), int(d)))


class MeanFunction:
    """``f(x)``, a callable predictor ``X -> E[y | x]`` (fixed by ``seed``)."""

    def __init__(self, kind: str = "linear", *, d: int = 10, mean: float = 5.0, spread: float = 1.0, seed: int = 0):
        if kind not in FUNCTIONS:
            raise ValueError(f"kind must be one of {FUNCTIONS}, got {kind!r}")
        rng = np.random.default_rng(seed)
        w = rng.standard_normal(d)
        self.kind, self.mean, self.spread, self.w = kind, float(mean), float(spread), w / np.linalg.norm(w)

    def __call__(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        z = X @ self.w
        if self.kind == "linear":
            g = z
        else:  # mean 0, variance ~1 for x ~ N(0, I)
            g = (np.sin(2 * z) + 0.5 * (X[:, 0] ** 2 - 1) + 0.5 * X[:, 1] * X[:, 2]) / np.sqrt((1 - np.exp(-8)) / 2 + 0.75)
        return np.maximum(self.mean + self.spread * g, self.mean / 10)


def noise(rng: np.random.Generator, n: int, eta: float, kind: str = "gaussian") -> np.ndarray:
    """Zero-mean noise of standard deviation ``eta``."""
    if kind not in NOISES:
        raise ValueError(f"noise kind must be one of {NOISES}, got {kind!r}")
    if eta < 0:
        raise ValueError(f"eta must be >= 0, got {eta}")
    if kind == "gaussian":
        return eta * rng.standard_normal(n)
    if kind == "student_t":
        return eta * rng.standard_t(STUDENT_DF, n) / np.sqrt(STUDENT_DF / (STUDENT_DF - 2))
    return eta * rng.choice([-1.0, 1.0], size=n)


def sample(rng: np.random.Generator, f: MeanFunction, n: int, eta: float, kind: str = "gaussian"):
    """``(X, y)`` with ``y = max(f(X) + ξ, 0)``."""
    X = make_contexts(rng, n, f.w.size)
    return X, np.maximum(f(X) + noise(rng, n, eta, kind), 0.0)
