"""The score interface shared by the MKS and the baselines, input checks and the conformal quantile."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator


class UnboundedRegionWarning(UserWarning):
    """The conformal threshold reaches the score's limit at infinity: the region has infinite volume."""


def check_residuals(E, name: str = "E", d: int | None = None) -> np.ndarray:
    """``E`` as a finite float array of shape ``(n, d)`` (a 1-D array is one output)."""
    if isinstance(E, (str, bytes)) or E is None:
        raise TypeError(f"{name} must be an array of shape (n, d), got {type(E).__name__}")
    try:
        E = np.asarray(E, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array of shape (n, d): {err}") from None
    if E.ndim == 1:
        E = E[:, None]
    if E.ndim != 2 or E.shape[0] == 0 or E.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n, d) with n, d >= 1, got {E.shape}")
    if not np.all(np.isfinite(E)):
        raise ValueError(f"{name} contains NaN or inf")
    if d is not None and E.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns (the dimension seen in fit), got {E.shape[1]}")
    return E


def check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
        raise TypeError(f"alpha must be a float in (0, 1), got {type(alpha).__name__}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(alpha)


def min_calibration_size(alpha: float) -> int:
    """The smallest ``n`` with ``ceil((1 - alpha)(n + 1)) <= n``, i.e. a finite threshold."""
    alpha = check_alpha(alpha)
    n = max(1, math.ceil((1.0 - alpha) / alpha) - 1)
    while math.ceil((1.0 - alpha) * (n + 1) - 1e-12) > n:
        n += 1
    return n


def conformal_quantile(scores, alpha: float) -> float:
    """The split-conformal threshold: the ``ceil((1 - alpha)(n + 1))``-th smallest of ``n`` scores.

    With exchangeable calibration and test scores, ``P(s_test <= q) >= 1 - alpha``.

    Raises:
        ValueError: if ``n`` is too small for ``alpha`` (the threshold would be infinite);
            the message says how many calibration points are needed.
    """
    alpha = check_alpha(alpha)
    s = np.sort(np.asarray(scores, dtype=float).ravel())
    n = s.size
    if n == 0 or not np.all(np.isfinite(s)):
        raise ValueError("scores must be a non-empty finite array")
    k = math.ceil((1.0 - alpha) * (n + 1) - 1e-12)
    if k > n:
        raise ValueError(f"alpha={alpha} needs at least {min_calibration_size(alpha)} calibration points, "
                         f"got {n}")
    return float(s[k - 1])


class BaseScore(BaseEstimator):
    """A nonconformity score on residuals ``e = y - f(x)`` (optionally depending on ``x``).

    Subclasses implement ``fit(E, X=None)`` and ``score_samples(E, X=None)``; the prediction
    region at threshold ``q`` is ``{e : s(e) <= q}``.
    """

    local = False  # True when the score depends on x

    def _check_fitted(self):
        if not hasattr(self, "dim_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit(E) first")

    def calibrate(self, E, alpha: float, X=None):
        """The conformal threshold on the calibration residuals ``E``."""
        return conformal_quantile(self.score_samples(E, X), alpha)

    def contains(self, E, q, X=None) -> np.ndarray:
        return self.score_samples(E, X) <= q

    def limit_at_infinity(self, X=None) -> float:
        """``lim s(e)`` as ``|e| -> inf`` (``inf`` for scores that grow without bound)."""
        return math.inf

    def is_bounded(self, q, X=None) -> bool:
        """Whether the region ``{s <= q}`` is bounded (``q`` below the limit at infinity)."""
        return bool(np.all(np.asarray(q) < self.limit_at_infinity(X)))

    def closed_form_volume(self, q, X=None):
        """Region volume in closed form, or ``None`` when only Monte Carlo applies."""
        return None

    def _warn_if_unbounded(self, q, X=None) -> bool:
        if not self.is_bounded(q, X):
            warnings.warn(f"{type(self).__name__}: threshold {float(np.max(q)):.4g} >= the score's limit at "
                          f"infinity {self.limit_at_infinity(X):.4g}; the region is unbounded (infinite volume). "
                          "Use more calibration points, a larger alpha or a smaller lengthscale.",
                          UnboundedRegionWarning, stacklevel=3)
            return True
        return False
