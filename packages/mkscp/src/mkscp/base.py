"""The score interface shared by the MKS and the baselines, parameter checks and the conformal quantile.

Sign conventions (scikit-learn's): ``nonconformity(E)`` is the paper's score ``s(e)`` (lower = more
typical; the region is ``{s <= q}``); ``score_samples(E) = -nonconformity(E)`` (higher = more normal,
as ``KernelDensity.score_samples`` and the outlier detectors' ``score_samples``).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data


class UnboundedRegionWarning(UserWarning):
    """The conformal threshold reaches the score's limit at infinity: the region has infinite volume."""


# parameter checks (numpy scalars accepted, bools and strings refused) ------------------------------
def check_real(name: str, v, *, low=None, high=None, low_open: bool = True, high_open: bool = True) -> float:
    """``v`` as a finite float in the given range; ``TypeError`` for a non-number (no coercion)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__} {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v < low or (low_open and v == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {v}")
    if high is not None and (v > high or (high_open and v == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {v}")
    return v


def check_int(name: str, v, *, low=None, allow_none: bool = False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int{' or None' if allow_none else ''}, got {type(v).__name__} {v!r}")
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    return int(v)


def check_auto_or_positive(name: str, v):
    if isinstance(v, str):
        if v != "auto":
            raise ValueError(f"{name} must be 'auto' or a positive number, got {v!r}")
        return v
    return check_real(name, v, low=0.0)


def check_random_state(v):
    if v is None or isinstance(v, np.random.Generator):
        return v
    return check_int("random_state", v, low=0)


def check_alpha(alpha) -> float:
    return check_real("alpha", alpha, low=0.0, high=1.0)


def check_residuals(E, name: str = "E", d: int | None = None) -> np.ndarray:
    """``E`` as a finite float array of shape ``(n, d)`` (for helpers outside an estimator)."""
    if isinstance(E, (str, bytes)) or E is None:
        raise TypeError(f"{name} must be an array of shape (n, d), got {type(E).__name__}")
    try:
        E = np.asarray(E, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array of shape (n, d): {err}") from None
    if E.ndim != 2 or E.shape[0] == 0 or E.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n, d) with n, d >= 1, got {E.shape}")
    if not np.all(np.isfinite(E)):
        raise ValueError(f"{name} contains NaN or inf")
    if d is not None and E.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns (the dimension seen in fit), got {E.shape[1]}")
    return E


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

    Subclasses implement ``_check_params()``, ``_fit(E, X)`` and ``_nonconformity(E, X)``. The
    residuals ``E`` play the role of scikit-learn's ``X`` (``n_features_in_`` = the output
    dimension ``d``); the regressor's features, which only a local score uses, are the keyword ``X``.
    The prediction region at threshold ``q`` is ``{e : nonconformity(e) <= q}``.

    Parameters are checked when set in the constructor and again in ``fit`` (``set_params`` and
    ``GridSearchCV`` bypass the constructor).
    """

    local = False  # True when the score depends on x
    _min_samples = 1

    def _check_params(self) -> None:  # pragma: no cover - every subclass overrides
        pass

    def _validate(self, E, *, reset: bool) -> np.ndarray:
        return validate_data(self, E, reset=reset, dtype=np.float64, ensure_min_samples=self._min_samples if reset
                             else 1)

    def fit(self, E, y=None, *, X=None):
        """Fit the score on the fit residuals ``E`` (shape ``(n, d)``).

        Args:
            E: residuals ``y - f(x)`` of the *fit* split.
            y: ignored (scikit-learn's signature).
            X: the features of those rows, shape ``(n, p)``; used by local scores only.
        """
        self._check_params()
        E = self._validate(E, reset=True)
        return self._fit(E, X)

    def nonconformity(self, E, *, X=None) -> np.ndarray:
        """The nonconformity ``s(e)`` of each row (lower = more typical), shape ``(m,)``."""
        check_is_fitted(self)
        return self._nonconformity(self._validate(E, reset=False), X)

    def score_samples(self, E, *, X=None) -> np.ndarray:
        """``-nonconformity(E)``: higher = more normal (scikit-learn's sign)."""
        return -self.nonconformity(E, X=X)

    @property
    def dim_(self) -> int:
        check_is_fitted(self)
        return self.n_features_in_

    def calibrate(self, E, alpha: float, *, X=None):
        """The conformal threshold on the calibration residuals ``E``."""
        return conformal_quantile(self.nonconformity(E, X=X), alpha)

    def contains(self, E, q, *, X=None) -> np.ndarray:
        return self.nonconformity(E, X=X) <= q

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
