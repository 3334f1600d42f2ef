"""Synthetic multi-output regression with non-elliptical residuals, and the macrodata demo.

The synthetic design extends the official generator's: ``x ~ U(0, 1)``, a smooth nonlinear mean
``f(x)`` in ``R^d``, and residuals that are Gaussian (the control), banana-shaped, a Gaussian
mixture, or heteroscedastic (scale growing and orientation rotating with ``x``).
"""

from __future__ import annotations

import numpy as np

RESIDUALS = ("gaussian", "banana", "mixture", "heteroscedastic")


def mean_function(x, d: int) -> np.ndarray:
    """``f_j(x) = (1 + j/d) sin(2 pi (x + j/d)) + x^2``, shape ``(n, d)``."""
    x = np.asarray(x, dtype=float).reshape(-1, 1)
    j = np.arange(d)[None, :] / d
    return (1 + j) * np.sin(2 * np.pi * (x + j)) + x**2


def _correlated(d: int, rng) -> np.ndarray:
    A = rng.normal(size=(d, d))
    S = A @ A.T / d + 0.5 * np.eye(d)
    s = np.sqrt(np.diag(S))
    return np.linalg.cholesky(S / np.outer(s, s))


def sample_residuals(kind: str, n: int, d: int, rng: np.random.Generator, x=None) -> np.ndarray:
    """``n`` residual vectors in ``R^d`` of the given ``kind`` (see ``RESIDUALS``)."""
    if kind not in RESIDUALS:
        raise ValueError(f"kind must be one of {RESIDUALS}, got {kind!r}")
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be >= 1, got n={n}, d={d}")
    z = rng.normal(size=(n, d))
    if kind == "gaussian":
        return 0.5 * z @ _correlated(d, np.random.default_rng(1234 + d)).T
    if kind == "banana":
        e = 0.35 * z
        e[:, 0] = z[:, 0]
        if d > 1:
            e[:, 1:] += 0.6 * (z[:, :1] ** 2 - 1.0)
        return 0.6 * e
    if kind == "mixture":
        k = rng.integers(0, 3, size=n)
        centres = np.zeros((3, d))
        centres[1, 0], centres[2, min(1, d - 1)] = 1.5, -1.5
        return centres[k] + 0.3 * z
    # scale and orientation both change with x: the marginal is a mixture of differently rotated
    # ellipses (non-elliptical), unlike a pure scale change, whose marginal stays elliptical
    x = rng.uniform(size=n) if x is None else np.asarray(x, dtype=float).ravel()
    e = 0.3 * z
    e[:, 0] = z[:, 0]
    if d > 1:
        c, s = np.cos(np.pi * x), np.sin(np.pi * x)
        e[:, 0], e[:, 1] = c * e[:, 0] - s * e[:, 1], s * e[:, 0] + c * e[:, 1]
    return 0.5 * (0.3 + 0.7 * x)[:, None] * e


def make_regression(kind: str, n: int, d: int, rng: np.random.Generator):
    """``(X, Y)`` with ``X ~ U(0, 1)`` of shape ``(n, 1)`` and ``Y = f(X) + e`` of shape ``(n, d)``."""
    x = rng.uniform(size=n)
    return x[:, None], mean_function(x, d) + sample_residuals(kind, n, d, rng, x=x)


def macrodata_growth(lags: int = 2):
    """The US macro growth demo from ``statsmodels.datasets.macrodata`` (bundled, offline).

    Quarterly annualised log growth (%) of real GDP, consumption and investment; the target is
    next quarter's 3-vector, the features are the previous ``lags`` quarters' vectors.
    Returns ``(X, Y)`` with shapes ``(n, 3 lags)`` and ``(n, 3)``, ``n = 202 - lags``.
    """
    from statsmodels.datasets import macrodata

    df = macrodata.load_pandas().data
    levels = np.log(df[["realgdp", "realcons", "realinv"]].to_numpy(dtype=float))
    g = 400.0 * np.diff(levels, axis=0)
    X = np.hstack([g[lags - k - 1:len(g) - k - 1] for k in range(lags)])
    return X, g[lags:]
