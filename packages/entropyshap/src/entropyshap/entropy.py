"""Entropy estimators for the three games, all returning the same columns.

For a predictive distribution of ``Y = (Y_1 … Y_d)`` every estimator returns ``2d + 2`` numbers (nats):

    [ H(Y) | H(Y_1) … H(Y_d) | H(Y_1) , H(Y_2 | Y_1) … H(Y_d | Y_<d) | TC(Y) ]
      joint  marginal (G1)     ordered (G2, chain rule of the joint)    total correlation

- :func:`gaussian_columns` — closed form from covariances: one batched Cholesky ``Σ = L Lᵀ`` gives
  ``H(Y) = d/2 log 2πe + Σ log L_jj``, ``H(Y_j) = ½ log 2πe Σ_jj`` and
  ``H(Y_j | Y_<j) = ½ log 2πe + log L_jj``; ``TC = Σ_j H(Y_j) − H(Y)``.
- :func:`mixture_columns` — Monte-Carlo entropy of a Gaussian **mixture** (the predictive distribution
  after feature removal): ``−E log p(y)`` with ``p`` the mixture density, never the average of the
  components' entropies. The prefix densities come from one triangular solve per component.
- :func:`knn_columns` — from samples: Kozachenko–Leonenko entropies (joint, prefixes, marginals) and the
  KSG estimator of total correlation (Kraskov et al. 2004, algorithm 1, generalised to d variables).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma, gammaln, logsumexp

LOG_2PIE = float(np.log(2 * np.pi * np.e))


def n_columns(d: int) -> int:
    return 2 * d + 2


def cholesky(cov: np.ndarray, name: str = "covariance") -> np.ndarray:
    """Batched Cholesky with a clear error when a matrix is not symmetric positive definite."""
    cov = np.asarray(cov, dtype=float)
    if not np.all(np.isfinite(cov)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if not np.allclose(cov, np.swapaxes(cov, -1, -2), rtol=1e-8, atol=1e-10):
        raise ValueError(f"{name} must be symmetric")
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be symmetric positive definite (Cholesky failed)") from None


def gaussian_columns(cov: np.ndarray) -> np.ndarray:
    """The ``2d + 2`` entropy columns of Gaussians with covariances ``cov`` ``(..., d, d)``, exactly."""
    L = cholesky(cov)
    logdiag = np.log(np.diagonal(L, axis1=-2, axis2=-1))  # (..., d)
    d = L.shape[-1]
    ordered = 0.5 * LOG_2PIE + logdiag
    joint = ordered.sum(-1, keepdims=True)
    marg = 0.5 * (LOG_2PIE + np.log(np.diagonal(cov, axis1=-2, axis2=-1)))
    tc = marg.sum(-1, keepdims=True) - joint
    out = np.concatenate([joint, marg, ordered, tc], axis=-1)
    assert out.shape[-1] == n_columns(d)
    return out


def mixture_columns(means: np.ndarray, covs: np.ndarray, eps: np.ndarray, comp: np.ndarray,
                    chols: np.ndarray | None = None) -> np.ndarray:
    """Monte-Carlo entropy columns of the equal-weight Gaussian mixture ``(1/K) Σ_k N(μ_k, Σ_k)``.

    Args:
        means: ``(B, K, d)`` component means (B independent mixtures, K components each).
        covs: ``(B, K, d, d)`` component covariances.
        eps: ``(M, d)`` standard normal draws (shared across mixtures: common random numbers).
        comp: ``(M,)`` component index of each draw (shared as well).
        chols: optional Cholesky factors of ``covs``.

    Returns:
        ``(B, 2d + 2)``: ``−mean log p`` of the joint, of each marginal and of each prefix (ordered
        game = differences of prefix entropies), and TC = Σ marginals − joint.
    """
    L = cholesky(covs) if chols is None else chols
    B, K, d = means.shape
    y = means[:, comp] + np.einsum("bmij,mj->bmi", L[:, comp], eps)  # (B, M, d)
    Linv = np.linalg.inv(L)  # (B, K, d, d), lower triangular
    diff = y[:, None, :, :] - means[:, :, None, :]  # (B, K, M, d)
    z = np.matmul(diff, np.swapaxes(Linv, -1, -2))  # (B, K, M, d); z_i depends on y_{≤i} only
    logdiag = np.log(np.diagonal(L, axis1=-2, axis2=-1))  # (B, K, d)
    # prefix log densities: log N(y_{≤j}) = −½ Σ_{i≤j} z_i² − Σ_{i≤j} log L_ii − (j/2) log 2π
    steps = -0.5 * z ** 2 - logdiag[:, :, None] - 0.5 * np.log(2 * np.pi)
    prefix = np.cumsum(steps, axis=-1)  # (B, K, M, d)
    log_prefix = logsumexp(prefix, axis=1) - np.log(K)  # (B, M, d)
    h_prefix = -log_prefix.mean(axis=1)  # (B, d)
    sd = np.sqrt(np.diagonal(covs, axis1=-2, axis2=-1))  # (B, K, d)
    # marginals from their own draws y_j = μ_j + σ_j ε_j: a feature that moves only the dependence then
    # leaves every marginal estimate unchanged (common random numbers), not just its expectation
    ym = means[:, comp] + sd[:, comp] * eps  # (B, M, d)
    zm = (ym[:, None, :, :] - means[:, :, None, :]) / sd[:, :, None]
    log_marg = logsumexp(-0.5 * zm ** 2 - np.log(sd)[:, :, None] - 0.5 * np.log(2 * np.pi), axis=1) - np.log(K)
    h_marg = -log_marg.mean(axis=1)  # (B, d)
    ordered = np.diff(h_prefix, axis=-1, prepend=0.0)
    joint = h_prefix[:, -1:]
    return np.concatenate([joint, h_marg, ordered, h_marg.sum(-1, keepdims=True) - joint], axis=-1)


# sample-based -------------------------------------------------------------------------------------

def kl_entropy(samples: np.ndarray, k: int = 4) -> float:
    """Kozachenko–Leonenko entropy (nats) of samples ``(n, d)`` with the k-th neighbour (Euclidean).

    ``Ĥ = ψ(n) − ψ(k) + log c_d + (d/n) Σ_i log ε_i``, ``c_d`` the volume of the unit d-ball.
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    n, d = x.shape
    if n <= k:
        raise ValueError(f"kNN entropy needs more than k = {k} samples, got {n}")
    dist, _ = cKDTree(x).query(x, k=k + 1)
    eps = np.maximum(dist[:, k], 1e-300)
    log_cd = 0.5 * d * np.log(np.pi) - gammaln(0.5 * d + 1)
    return float(digamma(n) - digamma(k) + log_cd + d * np.mean(np.log(eps)))


def ksg_total_correlation(samples: np.ndarray, k: int = 4) -> float:
    """KSG estimate of the total correlation ``TC = Σ_j H(Y_j) − H(Y)`` of samples ``(n, d)``.

    Kraskov–Stögbauer–Grassberger, algorithm 1: ``ε_i`` the max-norm distance to the k-th joint
    neighbour, ``n_j(i)`` the points strictly closer than ``ε_i`` in coordinate j;
    ``TC = ψ(k) + (d − 1) ψ(n) − ⟨Σ_j ψ(n_j + 1)⟩``.
    """
    x = np.asarray(samples, dtype=float)
    n, d = x.shape
    if n <= k:
        raise ValueError(f"KSG needs more than k = {k} samples, got {n}")
    dist, _ = cKDTree(x).query(x, k=k + 1, p=np.inf)
    eps = dist[:, k]
    acc = np.zeros(n)
    for j in range(d):
        s = np.sort(x[:, j])
        cnt = np.searchsorted(s, x[:, j] + eps, "left") - np.searchsorted(s, x[:, j] - eps, "right") - 1
        acc += digamma(np.maximum(cnt, 0) + 1)
    return float(digamma(k) + (d - 1) * digamma(n) - acc.mean())


def knn_columns(samples: np.ndarray, k: int = 4) -> np.ndarray:
    """The ``2d + 2`` columns from samples ``(n, d)``: KL entropies and the KSG total correlation.

    The TC column is estimated on its own (KSG), so the chain rule ``joint = Σ marg − TC`` holds only
    up to the estimators' errors: that residual is a test of the estimators, not an identity.
    """
    x = np.asarray(samples, dtype=float)
    d = x.shape[1]
    prefix = np.array([kl_entropy(x[:, : j + 1], k) for j in range(d)])
    marg = np.array([prefix[0]] + [kl_entropy(x[:, j], k) for j in range(1, d)])
    ordered = np.diff(prefix, prepend=0.0)
    tc = ksg_total_correlation(x, k) if d > 1 else 0.0
    return np.concatenate([[prefix[-1]], marg, ordered, [tc]])


__all__ = ["gaussian_columns", "mixture_columns", "kl_entropy", "ksg_total_correlation", "knn_columns",
           "cholesky", "n_columns", "LOG_2PIE"]
