"""The baselines: Bonferroni box, global and kNN-local Mahalanobis, KDE-HPD and the MMD^2 density score.

Each is a :class:`~mkscp.base.BaseScore` fitted on the fit residuals and calibrated on the
calibration residuals, exactly like the MKS. Covariances come from scikit-learn
(``EmpiricalCovariance``), neighbours from ``NearestNeighbors``, the KDE from
``scipy.stats.gaussian_kde`` (Scott's rule, full bandwidth matrix).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln
from scipy.stats import gaussian_kde
from sklearn.covariance import EmpiricalCovariance
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from mkscp.base import (
    BaseScore,
    check_alpha,
    check_auto_or_positive,
    check_int,
    check_random_state,
    check_real,
    conformal_quantile,
)
from mkscp.kernels import auto_lengthscale, check_kernel, kernel_at_zero, kernel_diag, pairwise_kernel


def unit_ball_log_volume(d: int) -> float:
    """``log`` of the volume of the unit ball in ``R^d``: ``(d/2) log pi - log Gamma(d/2 + 1)``."""
    return 0.5 * d * math.log(math.pi) - float(gammaln(0.5 * d + 1.0))


def _check_X(X, n: int, name: str = "X") -> np.ndarray:
    if X is None:
        raise ValueError(f"{name} is required by a local (x-dependent) score: pass X=features")
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or len(X) != n:
        raise ValueError(f"{name} must have shape (n, p) with n={n} rows, got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or inf")
    return X


class MahalanobisScore(BaseScore):
    """``s(e) = (e - mu)^T Sigma^{-1} (e - mu)`` with the fit residuals' mean and covariance.

    The region is an ellipsoid with volume ``V_d q^{d/2} sqrt(det Sigma)`` (closed form).

    Args:
        reg: added to the covariance diagonal (relative to its mean variance).
    """

    _min_samples = 2

    def __init__(self, *, reg: float = 1e-9):
        self.reg = reg
        self._check_params()

    def _check_params(self):
        check_real("reg", self.reg, low=0.0, low_open=False)

    def _fit(self, E, X=None):
        cov = EmpiricalCovariance().fit(E)
        d = E.shape[1]
        scale = np.trace(cov.covariance_) / d
        S = cov.covariance_ + (self.reg * scale if scale > 0 else max(self.reg, 1e-12)) * np.eye(d)
        self.location_, self.covariance_ = cov.location_, S
        self.precision_ = np.linalg.pinv(S, hermitian=True)
        self.logdet_ = float(np.linalg.slogdet(S)[1])
        return self

    def _nonconformity(self, E, X=None):
        D = E - self.location_
        return np.einsum("ij,jk,ik->i", D, self.precision_, D)

    def closed_form_volume(self, q, X=None):
        check_is_fitted(self)
        d = self.n_features_in_
        n = 1 if X is None else len(X)
        return np.full(n, math.exp(unit_ball_log_volume(d) + 0.5 * d * math.log(q) + 0.5 * self.logdet_))


class LocalMahalanobisScore(BaseScore):
    """Mahalanobis with the mean and covariance of the residuals of the ``k`` nearest fit inputs.

    ``s(x, e) = (e - mu_k(x))^T Sigma_k(x)^{-1} (e - mu_k(x))``; the region at ``x`` is an ellipsoid
    (closed-form volume per ``x``). ``shrinkage`` mixes ``Sigma_k(x)`` with the global covariance.
    The features ``X`` are required in ``fit`` and every scoring call (keyword ``X=``).
    """

    local = True

    def __init__(self, *, n_neighbors: int = 100, shrinkage: float = 0.05):
        self.n_neighbors, self.shrinkage = n_neighbors, shrinkage
        self._check_params()

    def _check_params(self):
        check_int("n_neighbors", self.n_neighbors, low=2)
        check_real("shrinkage", self.shrinkage, low=0.0, high=1.0, low_open=False, high_open=False)

    def _fit(self, E, X=None):
        X = _check_X(X, len(E))
        if self.n_neighbors > len(E):
            raise ValueError(f"n_neighbors={self.n_neighbors} exceeds the {len(E)} fit residuals")
        self.fit_residuals_, self.neighbors_ = E, NearestNeighbors(n_neighbors=self.n_neighbors).fit(X)
        self.global_covariance_ = np.cov(E, rowvar=False).reshape(E.shape[1], E.shape[1])
        return self

    def _local(self, X):
        idx = self.neighbors_.kneighbors(X, return_distance=False)
        nb = self.fit_residuals_[idx]  # (m, k, d)
        mu = nb.mean(axis=1)
        D = nb - mu[:, None, :]
        S = np.einsum("mki,mkj->mij", D, D) / (self.n_neighbors - 1)
        S = (1 - self.shrinkage) * S + self.shrinkage * self.global_covariance_
        return mu, S

    def _nonconformity(self, E, X=None):
        X = _check_X(X, len(E))
        mu, S = self._local(X)
        D = E - mu
        return np.einsum("mi,mi->m", D, np.linalg.solve(S, D[..., None])[..., 0])

    def closed_form_volume(self, q, X=None):
        check_is_fitted(self)
        X = _check_X(X, len(X) if X is not None else 0)
        _, S = self._local(X)
        logdet = np.linalg.slogdet(S)[1]
        return np.exp(unit_ball_log_volume(self.n_features_in_) + 0.5 * self.n_features_in_ * math.log(q)
                      + 0.5 * logdet)


class KDEScore(BaseScore):
    """KDE-HPD: ``s(e) = -log p_hat(e)`` with a Gaussian KDE of the fit residuals (Scott's rule)."""

    _min_samples = 2

    def __init__(self, *, bw_method="scott"):
        self.bw_method = bw_method
        self._check_params()

    def _check_params(self):
        if isinstance(self.bw_method, str):
            if self.bw_method not in ("scott", "silverman"):
                raise ValueError(f"bw_method must be 'scott', 'silverman' or a positive number, got {self.bw_method!r}")
        else:
            check_real("bw_method", self.bw_method, low=0.0)

    def _fit(self, E, X=None):
        if len(E) <= E.shape[1]:
            raise ValueError(f"E must hold more residuals than dimensions, got {E.shape}")
        bw = self.bw_method if isinstance(self.bw_method, str) else float(self.bw_method)
        try:
            self.kde_ = gaussian_kde(E.T, bw_method=bw)
        except np.linalg.LinAlgError as err:
            raise ValueError(f"KDEScore: the residuals' covariance is singular ({err})") from None
        return self

    def _nonconformity(self, E, X=None):
        return -self.kde_.logpdf(E.T)


class MMDScore(BaseScore):
    """The MMD^2 density score ``s(e) = MMD^2(delta_e, P_n) = k(e,e) - 2 mean_j k(e, x_j) + mean K``.

    The ``gamma -> inf`` limit of the MKS (same kernel and automatic lengthscale); for a stationary
    kernel it ranks points like a KDE with that kernel. Its limit at infinity is ``k(0) + mean K``.
    """

    _min_samples = 2

    def __init__(self, *, kernel: str = "rbf", lengthscale="auto", nu: float = 1.5, random_state: int | None = 0):
        self.kernel, self.lengthscale, self.nu, self.random_state = kernel, lengthscale, nu, random_state
        self._check_params()

    def _check_params(self):
        check_kernel(self.kernel, self.nu)
        check_auto_or_positive("lengthscale", self.lengthscale)
        check_random_state(self.random_state)

    def _fit(self, E, X=None):
        if self.kernel == "linear":
            self.lengthscale_ = 1.0
        else:
            self.lengthscale_ = (auto_lengthscale(E, rng=np.random.default_rng(self.random_state))
                                 if self.lengthscale == "auto" else float(self.lengthscale))
        self.fit_residuals_ = E
        self.gram_mean_ = float(self._k(E, E).mean())
        return self

    def _k(self, A, B):
        return pairwise_kernel(A, B, kernel=self.kernel, lengthscale=self.lengthscale_, nu=self.nu)

    def _nonconformity(self, E, X=None):
        out = np.empty(len(E))
        for a in range(0, len(E), 8192):
            c = E[a:a + 8192]
            out[a:a + 8192] = (kernel_diag(c, kernel=self.kernel) - 2 * self._k(c, self.fit_residuals_).mean(1)
                               + self.gram_mean_)
        return out

    def limit_at_infinity(self, X=None):
        check_is_fitted(self)
        k0 = kernel_at_zero(self.kernel)
        return math.inf if k0 is None else k0 + self.gram_mean_


class BonferroniScore(BaseScore):
    """The Bonferroni box: each coordinate ``|e_j - median_j|`` calibrated at level ``alpha / d``.

    ``nonconformity`` returns the ``(n, d)`` coordinate scores (``score_samples`` their negatives);
    ``calibrate`` a threshold per coordinate; the region is a box of volume ``prod_j 2 q_j``.
    Coverage >= 1 - alpha by the union bound.
    """

    def __init__(self):
        pass

    def _check_params(self):
        pass

    def _fit(self, E, X=None):
        self.center_ = np.median(E, axis=0)
        return self

    def _nonconformity(self, E, X=None):
        return np.abs(E - self.center_)

    def calibrate(self, E, alpha, *, X=None):
        alpha = check_alpha(alpha)
        S = self.nonconformity(E, X=X)
        return np.array([conformal_quantile(S[:, j], alpha / self.n_features_in_) for j in range(S.shape[1])])

    def contains(self, E, q, *, X=None):
        return np.all(self.nonconformity(E, X=X) <= np.asarray(q), axis=1)

    def closed_form_volume(self, q, X=None):
        n = 1 if X is None else len(X)
        return np.full(n, float(np.prod(2.0 * np.asarray(q))))


SCORES = {
    "mahalanobis": MahalanobisScore,
    "local_mahalanobis": LocalMahalanobisScore,
    "kde": KDEScore,
    "mmd": MMDScore,
    "bonferroni": BonferroniScore,
}
