"""Tail-index estimation (Hill) and the E_CF-vs-budget experiment under heavy-tailed gradient noise."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from paperworks.utils import check_int


def tail_index(x, method: str = "hill", *, k=None) -> float:
    """Hill's estimator of the tail index α of |x|.

    α̂ = [ (1/k) Σ_{i=1..k} log(|x|_(i) / |x|_(k+1)) ]⁻¹ over the k largest order statistics
    (``k`` default ⌊√n⌋). Hill, *Ann. Statist.* 3 (1975).

    Example:
        >>> x = np.random.default_rng(0).pareto(1.5, 100_000) + 1
        >>> abs(tail_index(x) - 1.5) < 0.15
        True
    """
    if method != "hill":
        raise ValueError(f"method must be 'hill', got {method!r}")
    a = np.abs(np.asarray(x, dtype=float).ravel())
    if not np.all(np.isfinite(a)):
        raise ValueError("x must be finite")
    if a.size < 10:
        raise ValueError(f"x needs at least 10 values, got {a.size}")
    k = int(np.sqrt(a.size)) if k is None else check_int(k, "k", minimum=2, maximum=a.size - 1)
    top = np.sort(a)[::-1][: k + 1]
    if top[k] <= 0:
        raise ValueError("the (k+1)-th largest |x| is 0: too many zeros for a tail estimate")
    return float(1.0 / np.mean(np.log(top[:k] / top[k])))


def heavy_tail_sgd(X, y, *, budgets, alpha: float, noise_scale: float, clip=None, lam: float = 0.1,
                   replicates: int = 200, seed: int = 0):
    """E_CF of one frozen binary logistic head trained by SGD with injected Student-t gradient noise.

    f(w) = mean log-loss + (λ/2)‖w‖², full gradient plus ξ_k, ξ_k,i ~ ``noise_scale`` · t_α i.i.d.
    (tail index α). Constant step 1/L̂ (L̂ = ¼λ_max(XᵀX/n) + λ), K steps, tail-averaged iterate w̄_K
    (mean of the last K/2). Clipping (``clip``: a norm) applies to the noisy gradient. E_CF(K) is read as
    E‖w̄_K − w*‖ (finite for α > 1; our reading of "the optimisation part of the excess risk", inferred).

    Returns:
        (errors, noise): ``errors[j]`` = mean over ``replicates`` runs of ‖w̄_K − w*‖ for ``budgets[j]``;
        ``noise``: a sample of the injected noise (for the tail-index estimate).
    """
    replicates = check_int(replicates, "replicates", minimum=2)
    if not 1.0 < alpha:
        raise ValueError(f"alpha must be > 1 (finite mean), got {alpha}")
    X = np.c_[np.asarray(X, float), np.ones(len(X))]
    y = np.asarray(y, float)
    n, d = X.shape
    L = 0.25 * np.linalg.eigvalsh(X.T @ X / n)[-1] + lam
    eta = 1.0 / L

    def grad(W):  # (R, d)
        p = expit(W @ X.T)
        return (p - y) @ X / n + lam * W

    w = np.zeros((1, d))  # w* by full-batch gradient descent (strongly convex)
    for _ in range(20000):
        g = grad(w)
        w = w - eta * g
        if np.linalg.norm(g) < 1e-12:
            break
    w_star = w[0]
    rng = np.random.default_rng(seed)
    errors, noise = [], []
    for K in budgets:
        K = int(K)
        W = np.zeros((replicates, d))
        avg = np.zeros_like(W)
        for k in range(K):
            xi = noise_scale * rng.standard_t(alpha, size=W.shape)
            if len(noise) < 250:  # keep ~10⁶ noise draws for the tail index
                noise.append(xi.ravel().copy())
            g = grad(W) + xi
            if clip is not None:
                nrm = np.linalg.norm(g, axis=1, keepdims=True)
                g = g * np.minimum(1.0, clip / np.maximum(nrm, 1e-300))
            W = W - eta * g
            if k >= K // 2:
                avg += W
        avg /= K - K // 2
        errors.append(float(np.mean(np.linalg.norm(avg - w_star, axis=1))))
    return np.asarray(errors), np.concatenate(noise)


def rate_exponent(budgets, errors) -> float:
    """Least-squares slope of log E_CF on log K."""
    return float(np.polyfit(np.log(np.asarray(budgets, float)), np.log(np.asarray(errors, float)), 1)[0])
