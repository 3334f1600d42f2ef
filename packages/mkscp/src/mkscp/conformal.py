"""Split-conformal prediction regions for any multi-output scikit-learn regressor."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from mkscp.base import BaseScore, UnboundedRegionWarning, check_alpha, min_calibration_size
from mkscp.baselines import SCORES, MahalanobisScore
from mkscp.mks import MKSScore
from mkscp.volume import box_volume_stable, ellipsoid_volume_stable

ALL_SCORES = {"mks": MKSScore, **SCORES}


def make_score(score, **params) -> BaseScore:
    """A score instance from a name in ``ALL_SCORES`` (with ``params``) or an instance."""
    if isinstance(score, BaseScore):
        return clone(score) if hasattr(score, "get_params") else score
    if isinstance(score, str) and score in ALL_SCORES:
        return ALL_SCORES[score](**params)
    raise ValueError(f"score must be one of {sorted(ALL_SCORES)} or a BaseScore instance, got {score!r}")


def _check_XY(X, Y, name_y="Y", d=None):
    if X is None:
        raise TypeError("X must be an array of shape (n_samples, n_features), got None")
    Xa = np.asarray(X)
    if Xa.ndim != 2:
        raise ValueError(f"X must have shape (n_samples, n_features), got {Xa.shape}")
    if Xa.dtype.kind in "fc" and not np.all(np.isfinite(Xa)):
        raise ValueError("X contains NaN or inf")
    if Y is None:
        return X, None
    try:
        Ya = np.asarray(Y, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name_y} must be a numeric array of shape (n_samples, n_outputs)") from None
    if Ya.ndim != 2:
        raise ValueError(f"{name_y} must have shape (n_samples, n_outputs), got {Ya.shape} "
                         "(for one output use Y.reshape(-1, 1))")
    if len(Ya) != len(Xa):
        raise ValueError(f"X and {name_y} must have the same number of rows, got {len(Xa)} and {len(Ya)}")
    if not np.all(np.isfinite(Ya)):
        raise ValueError(f"{name_y} contains NaN or inf")
    if d is not None and Ya.shape[1] != d:
        raise ValueError(f"{name_y} must have {d} columns (the outputs seen in fit), got {Ya.shape[1]}")
    return X, Ya


class MultivariateConformalRegressor(BaseEstimator):
    """Split-conformal joint prediction regions ``{y : s(x, y - f(x)) <= q}`` around a regressor.

    Three disjoint parts of the data: the *train* part fits the regressor ``f``, the *fit* part
    fits the score (the MKS kernel, lengthscale and gamma, or a baseline's covariance), and the
    *calibration* part gives the threshold ``q``, the ``ceil((1 - alpha)(n_cal + 1))``-th smallest
    calibration score. Then ``P(Y in region(X)) >= 1 - alpha`` for exchangeable data.

    Args:
        estimator: any scikit-learn regressor with a 2-D ``predict`` (e.g. ``Ridge``,
            ``MultiOutputRegressor(...)``).
        score: ``"mks"`` (default), ``"mahalanobis"``, ``"local_mahalanobis"``, ``"kde"``, ``"mmd"``,
            ``"bonferroni"``, or a :class:`~mkscp.base.BaseScore` instance.
        alpha: miscoverage level in (0, 1).
        fit_size, cal_size: fractions of ``(X, Y)`` for the score fit and the calibration when
            ``fit`` splits the data itself (the rest trains the regressor).
        prefit: the estimator is already fitted; ``(X, Y)`` is split between fit and calibration only.
        score_params: keyword arguments for a score given by name.
        random_state: seed of the split.

    Example:
        >>> from sklearn.linear_model import Ridge
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(size=(900, 1)); Y = np.c_[X, -X] + rng.normal(size=(900, 2))
        >>> cp = MultivariateConformalRegressor(Ridge(), alpha=0.1, random_state=0).fit(X, Y)
        >>> cp.contains(X[:3], Y[:3]).dtype
        dtype('bool')
    """

    def __init__(self, estimator, score="mks", alpha: float = 0.1, *, fit_size: float = 0.25,
                 cal_size: float = 0.25, prefit: bool = False, score_params: dict | None = None,
                 random_state: int | None = None):
        self.estimator, self.score, self.alpha = estimator, score, alpha
        self.fit_size, self.cal_size, self.prefit = fit_size, cal_size, prefit
        self.score_params, self.random_state = score_params, random_state

    # fitting -------------------------------------------------------------------------------
    def fit(self, X, Y, *, fit_set=None, calib_set=None):
        """Fit the regressor, the score and the threshold.

        With ``fit_set=(X_fit, Y_fit)`` and ``calib_set=(X_cal, Y_cal)`` the score and the threshold
        use those sets and ``(X, Y)`` only trains the regressor (unless ``prefit``). Otherwise
        ``(X, Y)`` is split at random.
        """
        alpha = check_alpha(self.alpha)
        if not hasattr(self.estimator, "predict"):
            raise TypeError(f"estimator must be a scikit-learn regressor, got {type(self.estimator).__name__}")
        X, Y = _check_XY(X, Y)
        if (fit_set is None) != (calib_set is None):
            raise ValueError("give both fit_set and calib_set, or neither")
        if fit_set is not None:
            (Xf, Yf), (Xc, Yc) = fit_set, calib_set
            Xf, Yf = _check_XY(Xf, Yf, "Y_fit", Y.shape[1])
            Xc, Yc = _check_XY(Xc, Yc, "Y_cal", Y.shape[1])
            Xt, Yt = X, Y
        else:
            for name, v in (("fit_size", self.fit_size), ("cal_size", self.cal_size)):
                if not 0.0 < v < 1.0:
                    raise ValueError(f"{name} must be in (0, 1), got {v}")
            if not self.prefit and self.fit_size + self.cal_size >= 1.0:
                raise ValueError("fit_size + cal_size must be < 1 (the rest trains the estimator)")
            n = len(Y)
            perm = np.random.default_rng(self.random_state).permutation(n)
            if self.prefit:
                nf = int(round(n * self.fit_size / (self.fit_size + self.cal_size)))
                tr, fi, ca = perm[:0], perm[:nf], perm[nf:]
            else:
                nf, nc = int(round(n * self.fit_size)), int(round(n * self.cal_size))
                fi, ca, tr = perm[:nf], perm[nf:nf + nc], perm[nf + nc:]
            take = _rows
            Xt, Yt, Xf, Yf, Xc, Yc = take(X, tr), Y[tr], take(X, fi), Y[fi], take(X, ca), Y[ca]
        need = min_calibration_size(alpha)
        if len(Yc) < need:
            raise ValueError(f"alpha={alpha} needs at least {need} calibration points, got {len(Yc)}")
        if self.prefit:
            check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
        else:
            self.estimator_ = clone(self.estimator).fit(Xt, Yt)
        self.n_outputs_ = Y.shape[1]
        self.score_ = make_score(self.score, **(self.score_params or {}))
        self.score_.fit(self._residuals(Xf, Yf), _as_float(Xf))
        self.threshold_ = self.score_.calibrate(self._residuals(Xc, Yc), alpha, _as_float(Xc))
        self.n_fit_, self.n_calibration_ = len(Yf), len(Yc)
        self._fit_residuals = self._residuals(Xf, Yf)
        self.bounded_ = self.score_.is_bounded(self.threshold_)
        if not self.bounded_:
            self.score_._warn_if_unbounded(self.threshold_)
        return self

    def _residuals(self, X, Y):
        P = self.predict(X)
        if P.shape != Y.shape:
            raise ValueError(f"estimator.predict returned shape {P.shape}, expected {Y.shape}")
        return Y - P

    # prediction ----------------------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """The regressor's point predictions, shape ``(n, n_outputs)``."""
        P = np.asarray(self.estimator_.predict(X), dtype=float)
        return P[:, None] if P.ndim == 1 else P

    def score_samples(self, X, Y) -> np.ndarray:
        """Nonconformity scores of ``(X, Y)``, shape ``(n,)`` (``(n, d)`` for the Bonferroni box)."""
        check_is_fitted(self, "threshold_")
        X, Y = _check_XY(X, Y, "Y", self.n_outputs_)
        return self.score_.score_samples(self._residuals(X, Y), _as_float(X))

    def contains(self, X, Y) -> np.ndarray:
        """Whether each ``Y[i]`` lies in the prediction region of ``X[i]``: boolean, shape ``(n,)``."""
        check_is_fitted(self, "threshold_")
        X, Y = _check_XY(X, Y, "Y", self.n_outputs_)
        return np.asarray(self.score_.contains(self._residuals(X, Y), self.threshold_, _as_float(X)), dtype=bool)

    def region_volume(self, X=None, *, method: str = "auto", n_points: int = 100_000,
                      random_state: int | None = 0) -> np.ndarray:
        """The volume of the prediction region at each row of ``X``, shape ``(n,)``.

        Closed form for ellipsoids and boxes; otherwise Monte Carlo (``"ellipsoid"``: importance
        sampling from a growing Mahalanobis ellipsoid; ``"box"``: bounding-box sampling). A global
        score has the same volume at every ``x``. An unbounded region gives ``inf`` and an
        :class:`~mkscp.base.UnboundedRegionWarning`.
        """
        check_is_fitted(self, "threshold_")
        n = 1 if X is None else len(X)
        if method not in ("auto", "ellipsoid", "box"):
            raise ValueError(f"method must be 'auto', 'ellipsoid' or 'box', got {method!r}")
        if not self.score_.is_bounded(self.threshold_):
            with warnings.catch_warnings():
                warnings.simplefilter("always", UnboundedRegionWarning)
                self.score_._warn_if_unbounded(self.threshold_)
            return np.full(n, math.inf)
        Xf = None if X is None else _as_float(X)
        closed = self.score_.closed_form_volume(self.threshold_, Xf) if method == "auto" else None
        if closed is not None:
            return np.broadcast_to(np.asarray(closed, dtype=float), (n,)).copy()
        if self.score_.local:
            raise ValueError(f"{type(self.score_).__name__} needs a closed-form volume")
        rng = np.random.default_rng(random_state)
        E = self._fit_residuals
        if method == "box":
            lo, hi = E.min(axis=0), E.max(axis=0)
            pad = 0.25 * (hi - lo)
            est = box_volume_stable(self.score_, self.threshold_, lo - pad, hi + pad, n_points=n_points, rng=rng)
        else:
            maha = MahalanobisScore().fit(E)
            r0 = math.sqrt(float(np.max(maha.score_samples(E))))
            est = ellipsoid_volume_stable(self.score_, self.threshold_, maha.location_, maha.covariance_, r0,
                                          n_points=n_points, rng=rng)
        self.volume_info_ = est
        return np.full(n, est["volume"])


def _as_float(X):
    try:
        return np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        return None


def _rows(X, idx):
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    return np.asarray(X)[idx]
