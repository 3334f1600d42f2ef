r"""Independent ground truth for the tilted target μ* ∝ p · exp Ψ(·, μ*).

``solve_tilt_1d``: a damped fixed point on a 1-D grid (no particles, no diffusion): with q the probability
vector on the grid and φ the potential, φ ← (1 − η) φ + η Ψ(·, q(φ)), q(φ) ∝ p · e^φ, until
max|Δφ| < tol. η = 2/(2 + ρ̂) with ρ̂ the spectral radius of the map's Jacobian (power iteration), which
makes the iteration a contraction when R is concave (Jacobian eigenvalues ≤ 0, as for −MMD², −‖mean −
m*‖² and the entropy).

``gaussian_mean_tilt``: the closed form for a Gaussian prior N(m₀, C) and the mean reward
R = −(λ/2)‖m_μ − m*‖²: μ* = N((I + λC)⁻¹(m₀ + λ C m*), C).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import torch

from meanfieldsteer.particles import WeightedParticles, as_tensor
from meanfieldsteer.rewards import MeasureReward, jvp_w
from paperworks import check_float, check_int


def solve_tilt_1d(logp, reward: MeasureReward, grid, *, tol: float = 1e-8, max_iter: int = 100_000,
                  return_info: bool = False):
    """Density of μ* on ``grid`` (G,) for the 1-D prior with log-density ``logp`` (callable on a (G,) array, or
    its (G,) values). Returns a (G,) numpy array integrating to 1 (Riemann sum on the uniform grid); with
    ``return_info`` also ``{"iterations", "residual"}``. Raises RuntimeError if it does not converge."""
    if not isinstance(reward, MeasureReward):
        raise TypeError(f"reward must be a MeasureReward, got {type(reward).__name__}")
    g = np.asarray(as_tensor(grid, "grid").double().cpu())
    if g.ndim != 1 or g.size < 3 or not np.all(np.diff(g) > 0):
        raise ValueError("grid must be a 1-D increasing array of at least 3 points")
    dx = np.diff(g)
    if not np.allclose(dx, dx[0], rtol=1e-6):
        raise ValueError("grid must be uniform")
    tol = check_float(tol, "tol", minimum=0.0, open_minimum=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    lp = np.asarray(logp(g) if callable(logp) else logp, dtype=float)
    if lp.shape != g.shape or not np.all(np.isfinite(lp)):
        raise ValueError(f"logp must give {g.size} finite values on the grid")
    xg = torch.as_tensor(g)[:, None]
    lp_t = torch.as_tensor(lp - lp.max())
    prep = reward.prepare(xg, xg)
    phi = torch.zeros_like(lp_t)
    u = torch.ones_like(lp_t)
    for it in range(1, max_iter + 1):
        q = torch.softmax(lp_t + phi, 0)
        new = prep(q)
        v = q * u
        jv = jvp_w(prep, q, v - q * v.sum())
        rho = float(jv.norm() / u.norm())
        u = jv if rho > 0 else u
        eta = 2.0 / (2.0 + 1.1 * rho)
        step = eta * (new - phi)
        step = step - step.mean()  # the constant is irrelevant
        phi = phi + step
        res = float(step.abs().max())
        if res < tol:
            q = torch.softmax(lp_t + phi, 0).numpy()
            dens = q / dx[0]
            return (dens, {"iterations": it, "residual": res}) if return_info else dens
    raise RuntimeError(f"solve_tilt_1d did not converge in {max_iter} iterations (last step {res:.2e})")


def fixed_point_residual(logp, reward: MeasureReward, grid, density) -> float:
    """max over the grid of |log μ − log p − Ψ(·, μ) − c| (c fitted): 0 at the tilt's fixed point."""
    g = np.asarray(grid, dtype=float)
    lp = np.asarray(logp(g) if callable(logp) else logp, dtype=float)
    q = np.asarray(density, dtype=float) * (g[1] - g[0])
    psi = reward.first_variation(torch.as_tensor(g)[:, None],
                                 WeightedParticles.from_weights(torch.as_tensor(g)[:, None], torch.as_tensor(q)))
    r = np.log(q) - lp - psi.numpy()
    mask = q > 1e-300
    return float(np.max(np.abs(r[mask] - np.mean(r[mask]))))


def gaussian_mean_tilt(mean, cov, target_mean, lam) -> tuple[np.ndarray, np.ndarray]:
    """(mean, cov) of μ* for the prior N(mean, cov) and R = −(λ/2)‖m_μ − target_mean‖²."""
    m = np.asarray(as_tensor(mean, "mean").double().cpu())
    c = np.asarray(as_tensor(cov, "cov").double().cpu())
    t = np.asarray(as_tensor(target_mean, "target_mean").double().cpu())
    lam = check_float(lam, "lam", minimum=0.0)
    d = m.shape[0]
    if m.ndim != 1 or c.shape != (d, d) or t.shape != (d,):
        raise ValueError(f"need mean (d,), cov (d, d), target_mean (d,); got {m.shape}, {c.shape}, {t.shape}")
    new = scipy.linalg.solve(np.eye(d) + lam * c, m + lam * c @ t)
    return new, c.copy()


__all__ = ["fixed_point_residual", "gaussian_mean_tilt", "solve_tilt_1d"]
