"""Split-conformal prediction regions for any multi-output scikit-learn regressor."""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.linear_model import Ridge
from sklearn.utils import check_array
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from mkscp.base import (
    BaseScore,
    UnboundedRegionWarning,
    check_alpha,
    check_random_state,
    check_real,
    min_calibration_size,
)
from mkscp.baselines import SCORES
from mkscp.mks import MKSScore
from mkscp.volume import METHODS, region_volume

ALL_SCORES = {"mks": MKSScore, **SCORES}
_RENAMED = "`score` was renamed `nonconformity_score` in mkscp 0.2 (it shadowed the score() method); "\
           "the old name will be removed in 0.3"


def make_score(score, **params) -> BaseScore:
    """A score instance from a name in ``ALL_SCORES`` (with ``params``) or an instance (cloned)."""
    if isinstance(score, BaseScore):
        return clone(score)
    if isinstance(score, str) and score in ALL_SCORES:
        return ALL_SCORES[score](**params)
    raise ValueError(f"nonconformity_score must be one of {sorted(ALL_SCORES)} or a BaseScore instance, "
                     f"got {score!r}")


def _check_Y(Y, name="Y", d=None, n=None, *, keep_1d=False):
    if Y is None:
        raise ValueError(f"requires y to be passed, but the target y is None ({name})")
    if isinstance(Y, (str, bytes)):
        raise TypeError(f"{name} must be a numeric array of shape (n_samples, n_outputs)")
    Ya = check_array(Y, ensure_2d=False, dtype=np.float64, input_name=name)
    if Ya.ndim == 1 and not keep_1d:
        Ya = Ya[:, None]
    if Ya.ndim not in (1, 2) or (Ya.ndim == 1 and not keep_1d):
        raise ValueError(f"{name} must have shape (n_samples,) or (n_samples, n_outputs), got {Ya.shape}")
    if n is not None and len(Ya) != n:
        raise ValueError(f"X and {name} must have the same number of rows, got {n} and {len(Ya)}")
    if d is not None and Ya.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns (the outputs seen in fit), got {Ya.shape[1]}")
    return Ya


def _check_X(X):
    """Refuse sparse, 1-D, empty or complex ``X`` with scikit-learn's messages; the content (NaN, strings) is
    the regressor's to judge. Returns the number of rows."""
    if X is None:
        raise ValueError("X must be an array of shape (n_samples, n_features), got None")
    check_array(X, accept_sparse=False, dtype=None, ensure_all_finite=False, ensure_2d=True, input_name="X")
    return _num_samples(X)


class MultivariateConformalRegressor(RegressorMixin, BaseEstimator):
    """Split-conformal joint prediction regions ``{y : s(x, y - f(x)) <= q}`` around a regressor.

    Three disjoint parts of the data: the *train* part fits the regressor ``f``, the *fit* part
    fits the score (the MKS kernel, lengthscale and gamma, or a baseline's covariance), and the
    *calibration* part gives the threshold ``q``, the ``ceil((1 - alpha)(n_cal + 1))``-th smallest
    calibration score. Then ``P(Y in region(X)) >= 1 - alpha`` for exchangeable data.

    Args:
        estimator: any scikit-learn regressor with ``fit``/``predict`` (e.g. ``Ridge``,
            ``MultiOutputRegressor(...)``); ``None`` means ``Ridge()``.
        nonconformity_score: ``"mks"`` (default), ``"mahalanobis"``, ``"local_mahalanobis"``,
            ``"kde"``, ``"mmd"``, ``"bonferroni"``, or a :class:`~mkscp.base.BaseScore` instance.
            (Called ``score`` before 0.2; that keyword still works, with a ``FutureWarning``.)
        alpha: miscoverage level in (0, 1).
        fit_size, cal_size: fractions of ``(X, Y)`` for the score fit and the calibration when
            ``fit`` splits the data itself (the rest trains the regressor).
        prefit: the estimator is already fitted; ``(X, Y)`` is split between fit and calibration only.
        score_params: keyword arguments for a score given by name.
        random_state: seed of the split (and the default seed of the Monte-Carlo volume in ``score``).

    Methods follow scikit-learn: ``predict(X)`` gives the point prediction; ``score(X, Y)`` is the
    *negative mean region volume* (higher is better, so ``GridSearchCV`` and ``cross_val_score``
    pick the smallest regions at the nominal coverage, which the calibration guarantees);
    ``nonconformity(X, Y)`` is the score ``s`` of each pair (lower = more typical). (Before 0.2
    ``score_samples(X, Y)`` returned ``s``, the opposite of scikit-learn's sign, and took ``Y``,
    which scikit-learn's ``score_samples(X)`` does not; it is gone rather than silently flipped.
    The score classes' ``score_samples(E) = -s(e)`` has scikit-learn's sign.)

    Example:
        >>> from sklearn.linear_model import Ridge
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(size=(900, 1)); Y = np.c_[X, -X] + rng.normal(size=(900, 2))
        >>> cp = MultivariateConformalRegressor(Ridge(), alpha=0.1, random_state=0).fit(X, Y)
        >>> cp.contains(X[:3], Y[:3]).dtype
        dtype('bool')
    """

    def __init__(self, estimator=None, nonconformity_score="mks", alpha: float = 0.1, *, fit_size: float = 0.25,
                 cal_size: float = 0.25, prefit: bool = False, score_params: dict | None = None,
                 random_state: int | None = None, **deprecated):
        if "score" in deprecated:
            warnings.warn(_RENAMED, FutureWarning, stacklevel=2)
            nonconformity_score = deprecated.pop("score")
        if deprecated:
            raise TypeError(f"unexpected keyword argument(s) {sorted(deprecated)}")
        self.estimator, self.nonconformity_score, self.alpha = estimator, nonconformity_score, alpha
        self.fit_size, self.cal_size, self.prefit = fit_size, cal_size, prefit
        self.score_params, self.random_state = score_params, random_state
        self._check_params()

    def set_params(self, **params):
        if "score" in params:
            warnings.warn(_RENAMED, FutureWarning, stacklevel=2)
            params["nonconformity_score"] = params.pop("score")
        return super().set_params(**params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.regressor_tags.poor_score = True  # score() is a negative volume, not R^2
        return tags

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        est = self.estimator
        if est is not None and not (hasattr(est, "fit") and hasattr(est, "predict")):
            raise TypeError(f"estimator must be a scikit-learn regressor (fit/predict), got {type(est).__name__}")
        if not isinstance(self.nonconformity_score, BaseScore):
            if not isinstance(self.nonconformity_score, str) or self.nonconformity_score not in ALL_SCORES:
                raise ValueError(f"nonconformity_score must be one of {sorted(ALL_SCORES)} or a BaseScore instance, "
                                 f"got {self.nonconformity_score!r}")
        check_real("fit_size", self.fit_size, low=0.0, high=1.0)
        check_real("cal_size", self.cal_size, low=0.0, high=1.0)
        if not isinstance(self.prefit, (bool, np.bool_)):
            raise TypeError(f"prefit must be a bool, got {type(self.prefit).__name__}")
        if not self.prefit and self.fit_size + self.cal_size >= 1.0:
            raise ValueError("fit_size + cal_size must be < 1 (the rest trains the estimator)")
        if self.score_params is not None and not isinstance(self.score_params, dict):
            raise TypeError(f"score_params must be a dict or None, got {type(self.score_params).__name__}")
        check_random_state(self.random_state)

    # fitting -------------------------------------------------------------------------------
    def fit(self, X, Y, *, fit_set=None, calib_set=None):
        """Fit the regressor, the score and the threshold.

        ``Y`` has shape ``(n, d)`` (or ``(n,)``: one output). With ``fit_set=(X_fit, Y_fit)`` and
        ``calib_set=(X_cal, Y_cal)`` the score and the threshold use those sets and ``(X, Y)`` only
        trains the regressor (unless ``prefit``). Otherwise ``(X, Y)`` is split at random.
        """
        self._check_params()
        alpha = float(self.alpha)
        n = _check_X(X)
        validate_data(self, X, reset=True, skip_check_array=True)
        Y = _check_Y(Y, n=n, keep_1d=True)
        self._y_1d = Y.ndim == 1
        Y = Y[:, None] if self._y_1d else Y
        if (fit_set is None) != (calib_set is None):
            raise ValueError("give both fit_set and calib_set, or neither")
        need = min_calibration_size(alpha)
        if fit_set is not None:
            (Xf, Yf), (Xc, Yc) = fit_set, calib_set
            Yf = _check_Y(Yf, "Y_fit", Y.shape[1], _check_X(Xf))
            Yc = _check_Y(Yc, "Y_cal", Y.shape[1], _check_X(Xc))
            Xt, Yt = X, Y
        else:
            fs, cs = float(self.fit_size), float(self.cal_size)
            perm = np.random.default_rng(self.random_state).permutation(n)
            if self.prefit:
                nf = int(round(n * fs / (fs + cs)))
                tr, fi, ca = perm[:0], perm[:nf], perm[nf:]
            else:
                nf, nc = int(round(n * fs)), int(round(n * cs))
                fi, ca, tr = perm[:nf], perm[nf:nf + nc], perm[nf + nc:]
            if len(ca) < need or len(fi) < 2 or (not self.prefit and len(tr) < 1):
                raise ValueError(f"alpha={alpha} needs at least {need} calibration points, got {len(ca)} "
                                 f"(n_samples = {n}; fit split {len(fi)}, calibration split {len(ca)})")
            Xt, Yt, Xf, Yf, Xc, Yc = _rows(X, tr), Y[tr], _rows(X, fi), Y[fi], _rows(X, ca), Y[ca]
        if len(Yc) < need:
            raise ValueError(f"alpha={alpha} needs at least {need} calibration points, got {len(Yc)}")
        if self.prefit:
            check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
        else:
            base = Ridge() if self.estimator is None else self.estimator
            self.estimator_ = clone(base).fit(Xt, Yt[:, 0] if self._y_1d else Yt)
        self.n_outputs_ = Y.shape[1]
        self.nonconformity_score_ = make_score(self.nonconformity_score, **(self.score_params or {}))
        Ef = self._residuals(Xf, Yf)
        self.nonconformity_score_.fit(Ef, X=_as_float(Xf))
        self.threshold_ = self.nonconformity_score_.calibrate(self._residuals(Xc, Yc), alpha, X=_as_float(Xc))
        self.n_fit_, self.n_calibration_ = len(Yf), len(Yc)
        self.fit_residuals_ = Ef
        self.bounded_ = self.nonconformity_score_.is_bounded(self.threshold_)
        if not self.bounded_:
            self.nonconformity_score_._warn_if_unbounded(self.threshold_)
        return self

    @property
    def score_(self) -> BaseScore:
        """The fitted score (deprecated name of ``nonconformity_score_``)."""
        check_is_fitted(self, "threshold_")
        return self.nonconformity_score_

    def _residuals(self, X, Y):
        P = self._predict2d(X)
        if P.shape != Y.shape:
            raise ValueError(f"estimator.predict returned shape {P.shape}, expected {Y.shape}")
        return Y - P

    def _predict2d(self, X):
        P = np.asarray(self.estimator_.predict(X), dtype=float)
        return P[:, None] if P.ndim == 1 else P

    # prediction ----------------------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """The regressor's point predictions, shape ``(n, n_outputs)`` (``(n,)`` if ``Y`` was 1-D in fit)."""
        check_is_fitted(self, "threshold_")
        _check_X(X)
        validate_data(self, X, reset=False, skip_check_array=True)
        P = self._predict2d(X)
        return P[:, 0] if self._y_1d else P

    def _check_XY(self, X, Y):
        check_is_fitted(self, "threshold_")
        n = _check_X(X)
        validate_data(self, X, reset=False, skip_check_array=True)
        return _check_Y(Y, d=self.n_outputs_, n=n)

    def nonconformity(self, X, Y) -> np.ndarray:
        """Nonconformity scores ``s`` of ``(X, Y)`` (lower = more typical), shape ``(n,)`` (``(n, d)`` for the
        Bonferroni box)."""
        Y = self._check_XY(X, Y)
        return self.nonconformity_score_.nonconformity(self._residuals(X, Y), X=_as_float(X))

    def contains(self, X, Y) -> np.ndarray:
        """Whether each ``Y[i]`` lies in the prediction region of ``X[i]``: boolean, shape ``(n,)``."""
        Y = self._check_XY(X, Y)
        return np.asarray(self.nonconformity_score_.contains(self._residuals(X, Y), self.threshold_, X=_as_float(X)),
                          dtype=bool)

    def region_volume(self, X=None, *, method: str = "auto", n_points: int = 20_000, max_points: int = 500_000,
                      rtol: float = 0.02, random_state=None, return_info: bool = False):
        """The volume of the prediction region at each row of ``X``, shape ``(n,)``.

        Closed form for ellipsoids and boxes. Otherwise Monte Carlo by
        :func:`mkscp.volume.region_volume`: ``method="auto"`` uses the variance-targeted importance
        sampler (a Gaussian mixture fitted to the region found by a pilot, with a defensive uniform
        part; uniform points in an interval for one output); points are added until the relative standard error is below ``rtol`` (the
        stated accuracy; ``info["stable"]`` says whether it was reached within ``max_points``). A
        global score has the same volume at every ``x``. An unbounded region gives ``inf`` and an
        :class:`~mkscp.base.UnboundedRegionWarning`.

        Args:
            method: ``"auto"``, ``"adaptive"``, ``"ellipsoid"``, ``"mixture"`` or ``"box"``.
            random_state: seed of the Monte Carlo (``None``: fresh entropy).
            return_info: also return the estimator's dict (``se``, ``rel_se``, ``stable``, ...).
        """
        check_is_fitted(self, "threshold_")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        n = 1 if X is None else _check_X(X)
        s, q = self.nonconformity_score_, self.threshold_
        info = {"volume": math.inf, "se": 0.0, "rel_se": 0.0, "stable": True, "truncated": False, "n_points": 0,
                "method": "unbounded"}
        if not s.is_bounded(q):
            with warnings.catch_warnings():
                warnings.simplefilter("always", UnboundedRegionWarning)
                s._warn_if_unbounded(q)
            vol = np.full(n, math.inf)
        elif s.local:
            if X is None:
                raise ValueError(f"{type(s).__name__} is local: region_volume needs X")
            if method not in ("auto",):
                raise ValueError(f"{type(s).__name__} has a closed-form volume only (method='auto')")
            vol = np.asarray(s.closed_form_volume(q, _as_float(X)), dtype=float)
            info = {**info, "volume": float(np.mean(vol)), "method": "closed_form"}
        else:
            info = region_volume(s, q, self.fit_residuals_, method=method, n_points=n_points, max_points=max_points,
                                 rtol=rtol, random_state=random_state)
            vol = np.full(n, info["volume"])
        return (vol, info) if return_info else vol

    def score(self, X, y, sample_weight=None) -> float:
        """Negative mean volume of the prediction regions at the rows of ``X`` (higher is better).

        The regions have coverage ``>= 1 - alpha`` by calibration, so at that nominal coverage the
        smaller region is the better one; ``y`` (shape ``(n, d)``) is validated but does not enter (check coverage with
        :meth:`contains`). The Monte Carlo uses ``random_state`` (0 when it is ``None``), so repeated
        calls agree. An unbounded region scores ``-inf``.
        """
        self._check_XY(X, y)
        seed = self.random_state if isinstance(self.random_state, numbers.Integral) else 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnboundedRegionWarning)
            vol = self.region_volume(X, random_state=seed)
        return -float(np.average(vol, weights=sample_weight))


def _as_float(X):
    try:
        return np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        return None


def _rows(X, idx):
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    return np.asarray(X)[idx]
