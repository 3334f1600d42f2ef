"""Metrics against the ground truth: weighted W1 (POT), Bures–Wasserstein (POT), mode mass, the J-gap."""

from __future__ import annotations

import numpy as np
import ot
import torch

from meanfieldsteer.particles import WeightedParticles, as_particles


def weighted_w1(particles, grid, density) -> float:
    """W1 between the weighted 1-D particles and the grid density (``ot.wasserstein_1d``)."""
    x, w = as_particles(particles).numpy()
    q = np.asarray(density, dtype=float)
    return float(ot.wasserstein_1d(x[:, 0], np.asarray(grid, dtype=float), w, q / q.sum(), p=1))


def left_mass(particles, split: float = 0.0) -> float:
    """Weighted mass of the particles left of ``split`` (the first mode's mass in Exp 1)."""
    x, w = as_particles(particles).numpy()
    return float(w[x[:, 0] < split].sum())


def bures(particles, mean, cov) -> float:
    """Bures–Wasserstein W2 between N(weighted mean, weighted cov) of the particles and N(mean, cov)."""
    p = as_particles(particles)
    ms, cs = p.mean().detach().cpu().double().numpy(), p.cov().detach().cpu().double().numpy()
    return float(ot.gaussian.bures_wasserstein_distance(ms, np.asarray(mean, float), cs, np.asarray(cov, float)))


def weighted_kde(particles, grid) -> np.ndarray:
    """Gaussian KDE of the weighted 1-D particles on ``grid`` (Silverman bandwidth with the ESS as n)."""
    p = as_particles(particles)
    x, w = p.numpy()
    x = x[:, 0]
    m = w @ x
    sd = np.sqrt(max(w @ (x - m) ** 2, 1e-12))
    h = 1.06 * sd * p.ess ** (-0.2)
    g = np.asarray(grid, dtype=float)
    dens = (np.exp(-0.5 * ((g[:, None] - x[None, :]) / h) ** 2) @ w) / (h * np.sqrt(2 * np.pi))
    return dens


_GRID_PREP: dict = {}


def objective(reward, logp_grid, grid, density) -> float:
    """J(μ) = R(μ) − KL(μ ‖ p) for a density on a uniform grid (Riemann sums)."""
    g = np.asarray(grid, dtype=float)
    dx = g[1] - g[0]
    q = np.asarray(density, dtype=float) * dx
    q = q / q.sum()
    mask = q > 0
    kl = float(np.sum(q[mask] * (np.log(q[mask] / dx) - np.asarray(logp_grid)[mask])))
    key = (id(reward), g.size, float(g[0]), float(g[-1]))
    if key not in _GRID_PREP:  # Ψ(grid, ·) on the grid keeps its kernel matrices: R from ∫ Ψ dμ for quadratic R
        gt = torch.as_tensor(g)[:, None]
        _GRID_PREP.clear()
        _GRID_PREP[key] = gt
    gt = _GRID_PREP[key]
    r = float(reward.value(WeightedParticles.from_weights(gt, torch.as_tensor(q))))
    return r - kl


def j_gap(particles, reward, logp_grid, grid, density_star) -> float:
    """J(μ*) − J(KDE of the particles) under ``reward`` (≥ 0 up to KDE smoothing)."""
    return objective(reward, logp_grid, grid, density_star) - objective(reward, logp_grid, grid,
                                                                         weighted_kde(particles, grid))


__all__ = ["bures", "j_gap", "left_mass", "objective", "weighted_kde", "weighted_w1"]
