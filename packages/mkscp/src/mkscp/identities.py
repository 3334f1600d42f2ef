"""Independent computations of the MKS identities, with scikit-learn (used by tests and by ``run``).

- :func:`gp_posterior_variance`: the posterior variance of a GP with the *centred* kernel and
  noise ``gamma`` at the fit residuals, from ``sklearn.gaussian_process.GaussianProcessRegressor``.
- :func:`mmd_minus_kpca`: ``MMD^2(delta_e, P_n) - sum_i lambda_i/(lambda_i + gamma) z_i(e)^2`` with the
  eigenvalues and projections of ``sklearn.decomposition.KernelPCA``.
"""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import KernelPCA
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Kernel, Matern
from sklearn.metrics.pairwise import rbf_kernel


class CentredKernel(Kernel):
    """``k~(a, b) = k(a, b) - mean_j k(a, r_j) - mean_j k(r_j, b) + mean_jl k(r_j, r_l)`` for a sklearn kernel ``k``."""

    def __init__(self, base, reference):
        self.base, self.reference = base, reference

    def _means(self, A):
        return self.base(A, self.reference).mean(axis=1)

    def __call__(self, X, Y=None, eval_gradient=False):
        if eval_gradient:
            raise ValueError("CentredKernel has no hyperparameters to differentiate")
        Y = X if Y is None else Y
        m = self.base(self.reference).mean()
        return self.base(X, Y) - self._means(X)[:, None] - self._means(Y)[None, :] + m

    def diag(self, X):
        return self.base.diag(X) - 2 * self._means(X) + self.base(self.reference).mean()

    def is_stationary(self):
        return False


def _sk_kernel(kernel: str, lengthscale: float, nu: float):
    if kernel == "rbf":
        return RBF(length_scale=lengthscale)
    if kernel == "matern":
        return Matern(length_scale=lengthscale, nu=nu)
    raise ValueError(f"kernel must be 'rbf' or 'matern' here, got {kernel!r}")


def gp_posterior_variance(E_fit, E, *, kernel: str = "rbf", lengthscale: float, gamma: float,
                          nu: float = 1.5) -> np.ndarray:
    """Posterior variance at ``E`` of a zero-mean GP with the centred kernel, noise ``gamma``, observed at ``E_fit``."""
    k = CentredKernel(_sk_kernel(kernel, lengthscale, nu), np.asarray(E_fit, dtype=float))
    gp = GaussianProcessRegressor(kernel=k, alpha=gamma, optimizer=None, normalize_y=False)
    gp.fit(E_fit, np.zeros(len(E_fit)))
    _, std = gp.predict(E, return_std=True)
    return std**2


def mmd_minus_kpca(E_fit, E, *, lengthscale: float, gamma: float) -> dict:
    """``{"mmd2", "kpca", "score"}`` for the RBF kernel via ``KernelPCA`` (independent of :mod:`mkscp.mks`)."""
    g = 1.0 / (2.0 * lengthscale**2)
    kp = KernelPCA(kernel="rbf", gamma=g, eigen_solver="dense", remove_zero_eig=True).fit(E_fit)
    lam = kp.eigenvalues_
    keep = lam > 1e-12 * lam.max()
    z = kp.transform(E)[:, keep]
    kpca = (z**2) @ (lam[keep] / (lam[keep] + gamma))
    mmd2 = 1.0 - 2.0 * rbf_kernel(E, E_fit, gamma=g).mean(axis=1) + rbf_kernel(E_fit, gamma=g).mean()
    return {"mmd2": mmd2, "kpca": kpca, "score": mmd2 - kpca}
