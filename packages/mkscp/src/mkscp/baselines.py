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

from mkscp.base import BaseScore, check_alpha, check_residuals, conformal_quantile
from mkscp.kernels import auto_lengthscale, check_kernel, kernel_at_zero, kernel_diag, pairwise_kernel


def unit_ball_log_volume(d: int) -> float:
    """``log`` of the volume of the unit ball in ``R^d``: ``(d/2) log pi - log Gamma(d/2 + 1)``."""
    return 0.5 * d * math.log(math.pi) - float(gammaln(0.5 * d + 1.0))


def _check_X(X, n: int, name: str = "X") -> np.ndarray:
    if X is None:
        raise ValueError(f"{name} is required by a local (x-dependent) score")
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

    def __init__(self, *, reg: float = 1e-9):
        if reg < 0:
            raise ValueError(f"reg must be >= 0, got {reg}")
        self.reg = reg

    def fit(self, E, X=None):
        E = check_residuals(E)
        if len(E) <= E.shape[1]:
            raise ValueError(f"E must hold more residuals than dimensions, got {E.shape}")
        cov = EmpiricalCovariance().fit(E)
        S = cov.covariance_ + self.reg * np.trace(cov.covariance_) / E.shape[1] * np.eye(E.shape[1])
        self.location_, self.covariance_ = cov.location_, S
        self.precision_ = np.linalg.inv(S)
        self.dim_ = E.shape[1]
        self._logdet = float(np.linalg.slogdet(S)[1])
        return self

    def score_samples(self, E, X=None):
        self._check_fitted()
        D = check_residuals(E, d=self.dim_) - self.location_
        return np.einsum("ij,jk,ik->i", D, self.precision_, D)

    def closed_form_volume(self, q, X=None):
        self._check_fitted()
        d = self.dim_
        n = 1 if X is None else len(X)
        return np.full(n, math.exp(unit_ball_log_volume(d) + 0.5 * d * math.log(q) + 0.5 * self._logdet))


class LocalMahalanobisScore(BaseScore):
    """Mahalanobis with the mean and covariance of the residuals of the ``k`` nearest fit inputs.

    ``s(x, e) = (e - mu_k(x))^T Sigma_k(x)^{-1} (e - mu_k(x))``; the region at ``x`` is an ellipsoid
    (closed-form volume per ``x``). ``shrinkage`` mixes ``Sigma_k(x)`` with the global covariance.
    """

    local = True

    def __init__(self, *, n_neighbors: int = 100, shrinkage: float = 0.05):
        if not isinstance(n_neighbors, int) or n_neighbors < 2:
            raise ValueError(f"n_neighbors must be an int >= 2, got {n_neighbors!r}")
        if not 0.0 <= shrinkage <= 1.0:
            raise ValueError(f"shrinkage must be in [0, 1], got {shrinkage}")
        self.n_neighbors, self.shrinkage = n_neighbors, shrinkage

    def fit(self, E, X=None):
        E = check_residuals(E)
        X = _check_X(X, len(E))
        if self.n_neighbors > len(E):
            raise ValueError(f"n_neighbors={self.n_neighbors} exceeds the {len(E)} fit residuals")
        self._E, self._nn = E, NearestNeighbors(n_neighbors=self.n_neighbors).fit(X)
        self._global = np.cov(E, rowvar=False).reshape(E.shape[1], E.shape[1])
        self.dim_, self._p = E.shape[1], X.shape[1]
        return self

    def _local(self, X):
        idx = self._nn.kneighbors(X, return_distance=False)
        nb = self._E[idx]  # (m, k, d)
        mu = nb.mean(axis=1)
        D = nb - mu[:, None, :]
        S = np.einsum("mki,mkj->mij", D, D) / (self.n_neighbors - 1)
        S = (1 - self.shrinkage) * S + self.shrinkage * self._global
        return mu, S

    def score_samples(self, E, X=None):
        self._check_fitted()
        E = check_residuals(E, d=self.dim_)
        X = _check_X(X, len(E))
        mu, S = self._local(X)
        D = E - mu
        return np.einsum("mi,mi->m", D, np.linalg.solve(S, D[..., None])[..., 0])

    def closed_form_volume(self, q, X=None):
        self._check_fitted()
        X = _check_X(X, len(X) if X is not None else 0)
        _, S = self._local(X)
        logdet = np.linalg.slogdet(S)[1]
        return np.exp(unit_ball_log_volume(self.dim_) + 0.5 * self.dim_ * math.log(q) + 0.5 * logdet)


class KDEScore(BaseScore):
    """KDE-HPD: ``s(e) = -log p_hat(e)`` with a Gaussian KDE of the fit residuals (Scott's rule)."""

    def __init__(self, *, bw_method="scott"):
        self.bw_method = bw_method

    def fit(self, E, X=None):
        E = check_residuals(E)
        if len(E) <= E.shape[1]:
            raise ValueError(f"E must hold more residuals than dimensions, got {E.shape}")
        self.kde_ = gaussian_kde(E.T, bw_method=self.bw_method)
        self.dim_ = E.shape[1]
        return self

    def score_samples(self, E, X=None):
        self._check_fitted()
        E = check_residuals(E, d=self.dim_)
        return -self.kde_.logpdf(E.T)


class MMDScore(BaseScore):
    """The MMD^2 density score ``s(e) = MMD^2(delta_e, P_n) = k(e,e) - 2 mean_j k(e, x_j) + mean K``.

    The ``gamma -> inf`` limit of the MKS (same kernel and automatic lengthscale); for a stationary
    kernel it ranks points like a KDE with that kernel. Its limit at infinity is ``k(0) + mean K``.
    """

    def __init__(self, *, kernel: str = "rbf", lengthscale="auto", nu: float = 1.5, random_state: int | None = 0):
        check_kernel(kernel, nu)
        self.kernel, self.lengthscale, self.nu, self.random_state = kernel, lengthscale, nu, random_state

    def fit(self, E, X=None):
        E = check_residuals(E)
        if self.kernel == "linear":
            self.lengthscale_ = 1.0
        else:
            self.lengthscale_ = (auto_lengthscale(E, rng=np.random.default_rng(self.random_state))
                                 if self.lengthscale == "auto" else float(self.lengthscale))
        self._E, self.dim_ = E, E.shape[1]
        K = self._k(E, E)
        self._m = float(K.mean())
        return self

    def _k(self, A, B):
        return pairwise_kernel(A, B, kernel=self.kernel, lengthscale=self.lengthscale_, nu=self.nu)

    def score_samples(self, E, X=None):
        self._check_fitted()
        E = check_residuals(E, d=self.dim_)
        out = np.empty(len(E))
        for a in range(0, len(E), 8192):
            c = E[a:a + 8192]
            out[a:a + 8192] = kernel_diag(c, kernel=self.kernel) - 2 * self._k(c, self._E).mean(1) + self._m
        return out

    def limit_at_infinity(self, X=None):
        self._check_fitted()
        k0 = kernel_at_zero(self.kernel)
        return math.inf if k0 is None else k0 + self._m


class BonferroniScore(BaseScore):
    """The Bonferroni box: each coordinate ``|e_j - median_j|`` calibrated at level ``alpha / d``.

    ``score_samples`` returns the ``(n, d)`` coordinate scores; ``calibrate`` a threshold per
    coordinate; the region is a box of volume ``prod_j 2 q_j``. Coverage >= 1 - alpha by the union bound.
    """

    def fit(self, E, X=None):
        E = check_residuals(E)
        self.center_, self.dim_ = np.median(E, axis=0), E.shape[1]
        return self

    def score_samples(self, E, X=None):
        self._check_fitted()
        return np.abs(check_residuals(E, d=self.dim_) - self.center_)

    def calibrate(self, E, alpha, X=None):
        alpha = check_alpha(alpha)
        S = self.score_samples(E, X)
        return np.array([conformal_quantile(S[:, j], alpha / self.dim_) for j in range(self.dim_)])

    def contains(self, E, q, X=None):
        return np.all(self.score_samples(E, X) <= np.asarray(q), axis=1)

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
