"""The Multivariate Kernel Score (MKS).

Meyer & Xu, "A Kernel Nonconformity Score for Multivariate Conformal Prediction", arXiv 2604.21595.

With a kernel ``k`` centred on the fit residuals ``x_1..x_n``,

    k~(a, b) = k(a, b) - mean_j k(a, x_j) - mean_j k(x_j, b) + mean_jl k(x_j, x_l),

the score of a residual ``e`` is

    s(e) = k~(e, e) - k~*(e)^T (K~ + gamma I)^{-1} k~*(e),     k~*(e)_i = k~(e, x_i),

i.e. the posterior variance at ``e`` of a Gaussian process with the centred kernel and noise
``gamma`` observed at the fit residuals. With the eigenpairs ``(lambda_i, u_i)`` of ``K~`` and the
kernel-PCA coordinates ``z_i(e) = u_i^T k~*(e) / sqrt(lambda_i)``,

    s(e) = MMD^2(delta_e, P_n) - sum_i lambda_i / (lambda_i + gamma) z_i(e)^2,

an MMD between the point mass at ``e`` and the fit residuals minus an (anisotropic) kernel-PCA
correction: ``gamma -> inf`` gives the MMD^2 (kernel-density) score, ``gamma -> 0`` the distance to
the kernel-PCA span, and in feature space ``s(e) = gamma phi~(e)^T (n C + gamma I)^{-1} phi~(e)``,
a regularised Mahalanobis distance with the kernel covariance ``C`` (the linear kernel gives
``gamma (e - mu)^T (X~^T X~ + gamma I)^{-1} (e - mu)``).

Defaults follow the official code: lengthscale = median pairwise distance x d/2, gamma = the
90th percentile of the (numerically) positive eigenvalues of ``K~``. Both are fitted here on the
*fit* residuals only, never on the calibration residuals.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from sklearn.utils.validation import check_is_fitted

from mkscp.base import (
    BaseScore,
    check_auto_or_positive,
    check_int,
    check_random_state,
    check_real,
)
from mkscp.kernels import auto_lengthscale, check_kernel, kernel_at_zero, kernel_diag, pairwise_kernel

_CHUNK = 8192


class MKSScore(BaseScore):
    """The Multivariate Kernel Score.

    Args:
        kernel: ``"rbf"`` (default), ``"matern"`` or ``"linear"``.
        lengthscale: a positive float or ``"auto"`` (median pairwise distance x d/2).
        gamma: the ridge ``gamma > 0`` or ``"auto"`` (the ``gamma_quantile`` quantile of the
            positive eigenvalues of the centred Gram matrix).
        nu: Matérn smoothness (0.5, 1.5 or 2.5).
        gamma_quantile: the quantile used by ``gamma="auto"`` (0.9).
        n_components: ``None`` for the exact score; an int ``r`` for the Nyström approximation
            with ``r`` landmarks (cost ``O(n r^2)`` to fit and ``O(r)`` kernel evaluations per point).
        rank_tol: eigen-directions with ``lambda_i < rank_tol * gamma`` are dropped from the exact
            score; the relative error this causes is at most ``rank_tol``. ``0`` keeps all of them.
        random_state: seed for the landmark choice and the lengthscale subsample.

    Attributes (after ``fit``): ``lengthscale_``, ``gamma_``, ``rank_`` (eigen-directions kept),
    ``n_features_in_`` (= ``dim_``, the output dimension), ``n_fit_``.

    ``nonconformity(E)`` is the score ``s(e)`` of the paper (the region is ``{s <= q}``);
    ``score_samples(E) = -s(e)`` has scikit-learn's sign (higher = more normal).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> s = MKSScore().fit(rng.normal(size=(300, 2)))
        >>> s.nonconformity(np.zeros((1, 2))) < s.nonconformity(np.full((1, 2), 3.0))
        array([ True])
    """

    _min_samples = 2

    def __init__(self, *, kernel: str = "rbf", lengthscale="auto", gamma="auto", nu: float = 1.5,
                 gamma_quantile: float = 0.9, n_components: int | None = None, rank_tol: float = 1e-7,
                 random_state: int | None = 0):
        self.kernel, self.lengthscale, self.gamma, self.nu = kernel, lengthscale, gamma, nu
        self.gamma_quantile, self.n_components, self.rank_tol = gamma_quantile, n_components, rank_tol
        self.random_state = random_state
        self._check_params()

    def _check_params(self) -> None:
        check_kernel(self.kernel, self.nu)
        check_auto_or_positive("lengthscale", self.lengthscale)
        check_auto_or_positive("gamma", self.gamma)
        check_real("gamma_quantile", self.gamma_quantile, low=0.0, high=1.0)
        check_int("n_components", self.n_components, low=1, allow_none=True)
        check_real("rank_tol", self.rank_tol, low=0.0, low_open=False)
        check_random_state(self.random_state)

    # kernel helpers ------------------------------------------------------------------------
    def _k(self, A, B):
        return pairwise_kernel(A, B, kernel=self.kernel, lengthscale=self.lengthscale_, nu=self.nu)

    def _auto_gamma(self, positive_eigs: np.ndarray) -> float:
        if self.gamma != "auto":
            return float(self.gamma)
        if positive_eigs.size == 0:
            raise ValueError("the centred Gram matrix has no positive eigenvalue (identical residuals?)")
        return float(np.quantile(positive_eigs, self.gamma_quantile))

    # fitting -------------------------------------------------------------------------------
    def _fit(self, E, X=None):
        """Fit the kernel, lengthscale and gamma on the fit residuals ``E`` (shape ``(n, d)``)."""
        rng = np.random.default_rng(self.random_state)
        self.n_fit_ = len(E)
        if self.kernel == "linear":
            self.lengthscale_ = 1.0
        else:
            self.lengthscale_ = (auto_lengthscale(E, rng=rng) if self.lengthscale == "auto"
                                 else float(self.lengthscale))
        if self.n_components is None:
            self._fit_exact(E)
        else:
            self._fit_nystrom(E, rng)
        return self

    def _fit_exact(self, E):
        self.nystrom_ = False
        K = self._k(E, E)
        col = K.mean(axis=0)
        m = float(col.mean())
        Kc = K - col[None, :] - col[:, None] + m
        # the whole spectrum (values only) gives gamma and the rank; then vectors for the kept top ones
        floor = 1e-10 * max(float(np.trace(Kc)), 1e-300)
        spectrum = sla.eigh(Kc, eigvals_only=True, driver="evd")
        self.gamma_ = self._auto_gamma(spectrum[spectrum > floor])
        k = int(np.sum(spectrum >= max(self.rank_tol * self.gamma_, floor)))
        if k == 0:
            raise ValueError("the centred Gram matrix has no eigenvalue above rank_tol * gamma")
        n = len(Kc)
        vals, vecs = sla.eigh(Kc, subset_by_index=(n - k, n - 1), driver="evr")
        keep = vals > floor
        self.eigenvalues_, self.eigenvectors_ = vals[keep], vecs[:, keep]
        self.rank_ = int(keep.sum())
        self.fit_residuals_, self._col_mean, self._grand_mean = E, col, m
        # k~* U = K_x U - r(e) (1^T U) - (col - m)^T U: centre after projecting (one pass over K_x)
        self._u_sum = self.eigenvectors_.sum(axis=0)
        self._c_proj = (col - m) @ self.eigenvectors_
        # s_inf: k(e, .) -> 0, so k~(e, e) -> k(0) + m and k~*(e) -> m - col
        k0 = kernel_at_zero(self.kernel)
        if k0 is None:
            self.limit_ = np.inf
        else:
            c = m - col
            self.limit_ = float(k0 + m - self._quad(c[None, :])[0])

    def _quad(self, kstar):
        """``k~*^T (K~ + gamma I)^{-1} k~*`` for rows of ``kstar`` (kept eigen-directions)."""
        proj = kstar @ self.eigenvectors_
        return (proj**2) @ (1.0 / (self.eigenvalues_ + self.gamma_))

    def _fit_nystrom(self, E, rng):
        self.nystrom_ = True
        r = min(self.n_components, len(E))
        idx = np.sort(rng.choice(len(E), r, replace=False)) if r < len(E) else np.arange(len(E))
        L = E[idx]
        w, V = np.linalg.eigh(self._k(L, L))
        ok = w > 1e-10 * w.max()
        self.landmarks_, self._proj = L, V[:, ok] / np.sqrt(w[ok])
        Z = self._features(E)
        self._zmean = Z.mean(axis=0)
        Zc = Z - self._zmean
        C = Zc.T @ Zc
        lam, U = np.linalg.eigh(C)
        lam = np.clip(lam, 0.0, None)
        pos = lam[lam > 1e-10 * max(lam.sum(), 1e-300)]
        self.gamma_ = self._auto_gamma(pos)
        self.rank_ = int(ok.sum())
        self._U, self._lam = U, lam
        k0 = kernel_at_zero(self.kernel)
        self.limit_ = np.inf if k0 is None else float(self._nys_quad(-self._zmean[None, :])[0] + k0)

    def _features(self, A):
        return self._k(A, self.landmarks_) @ self._proj

    def _nys_quad(self, zc):
        p = zc @ self._U
        return self.gamma_ * (p**2) @ (1.0 / (self._lam + self.gamma_))

    # scoring -------------------------------------------------------------------------------
    def _nonconformity(self, E, X=None) -> np.ndarray:
        """The MKS of each row of ``E`` (shape ``(m, d)``) → shape ``(m,)``; computed in chunks."""
        out = np.empty(len(E))
        for a in range(0, len(E), _CHUNK):
            out[a:a + _CHUNK] = self._score_chunk(E[a:a + _CHUNK])
        return out

    def _score_chunk(self, E):
        diag = kernel_diag(E, kernel=self.kernel)
        if self.nystrom_:
            Z = self._features(E)
            resid = np.clip(diag - np.einsum("ij,ij->i", Z, Z), 0.0, None)
            return self._nys_quad(Z - self._zmean) + resid
        Kx = self._k(E, self.fit_residuals_)
        r = Kx.mean(axis=1)
        proj = Kx @ self.eigenvectors_
        proj -= r[:, None] * self._u_sum[None, :] + self._c_proj[None, :]
        mmd2 = diag - 2.0 * r + self._grand_mean
        return mmd2 - (proj**2) @ (1.0 / (self.eigenvalues_ + self.gamma_))

    def _centred_cross(self, E, diag):
        Kx = self._k(E, self.fit_residuals_)
        r = Kx.mean(axis=1)
        kst = Kx - r[:, None] - self._col_mean[None, :] + self._grand_mean
        return kst, diag - 2.0 * r + self._grand_mean

    def decompose(self, E) -> dict:
        """``{"mmd2", "kpca", "score"}`` with ``score = mmd2 - kpca`` (exact fit only).

        ``mmd2`` is ``MMD^2(delta_e, P_n) = k~(e, e)``; ``kpca`` is
        ``sum_i lambda_i / (lambda_i + gamma) z_i(e)^2`` over the kernel-PCA coordinates ``z_i``.
        """
        check_is_fitted(self)
        if self.nystrom_:
            raise ValueError("decompose needs the exact score (n_components=None)")
        E = self._validate(E, reset=False)
        kst, mmd2 = self._centred_cross(E, kernel_diag(E, kernel=self.kernel))
        z = (kst @ self.eigenvectors_) / np.sqrt(self.eigenvalues_)
        kpca = (z**2) @ (self.eigenvalues_ / (self.eigenvalues_ + self.gamma_))
        return {"mmd2": mmd2, "kpca": kpca, "score": mmd2 - kpca}

    def limit_at_infinity(self, X=None) -> float:
        check_is_fitted(self)
        return self.limit_

    def effective_dimension(self) -> float:
        """``sum_i lambda_i / (lambda_i + gamma)``: the effective rank of the kernel covariance at ``gamma``."""
        check_is_fitted(self)
        lam = self._lam if self.nystrom_ else self.eigenvalues_
        return float(np.sum(lam / (lam + self.gamma_)))
