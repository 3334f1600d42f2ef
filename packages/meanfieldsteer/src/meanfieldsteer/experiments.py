"""The CPU miniature: Exp 1 (1-D bimodal prior, MMD reward) and Exp 2 (Gaussian prior, mean reward)."""

from __future__ import annotations

import numpy as np
import torch
from tqdm import tqdm

from meanfieldsteer.diffusion import GaussianMixture
from meanfieldsteer.ground_truth import fixed_point_residual, gaussian_mean_tilt, solve_tilt_1d
from meanfieldsteer.metrics import bures, left_mass, objective, weighted_kde, weighted_w1
from meanfieldsteer.particles import WeightedParticles
from meanfieldsteer.rewards import MeanReward, MMDReward
from meanfieldsteer.sampler import MeanFieldSampler

# method name -> sampler keyword arguments (reward None: unsteered)
METHODS = {
    "meanfield": {"mode": "meanfield", "k_fp": 3},
    "meanfield_k1": {"mode": "meanfield", "k_fp": 1},
    "meanfield_k5": {"mode": "meanfield", "k_fp": 5},
    "meanfield_k0": {"mode": "meanfield", "k_fp": 0},
    "meanfield_linear": {"mode": "meanfield", "psi_dot": "linear"},
    "gradient": {"mode": "gradient"},
    "pointwise": {"mode": "pointwise"},
    "unsteered": {"unsteered": True},
}


def exp1_problem(schedule: str = "linear", *, grid_points: int = 2000, nu_points: int = 201):
    """p = .25 N(−2, .5²) + .75 N(2, .5²); ν = the 3:1 reweighting, as a weighted grid on [−5, 5]."""
    p = GaussianMixture([0.25, 0.75], [[-2.0], [2.0]], [0.25, 0.25], schedule=schedule)
    nu_p = GaussianMixture([0.75, 0.25], [[-2.0], [2.0]], [0.25, 0.25])
    g = torch.linspace(-5.0, 5.0, nu_points, dtype=torch.float64)[:, None]
    nu = WeightedParticles.from_weights(g, nu_p.log_prob(g).exp())
    grid = np.linspace(-6.0, 6.0, grid_points)
    logp = p.log_prob(torch.as_tensor(grid)[:, None]).numpy()
    return p, nu, grid, logp


def make_sampler(method: str, score, reward, *, n_steps: int, schedule=None, device: str = "cpu"):
    kw = dict(METHODS[method])
    if kw.pop("unsteered", False):
        reward = None
    return MeanFieldSampler(score, reward, n_steps=n_steps, schedule=schedule, device=device, **kw)


def run_exp1(cfg, seeds) -> tuple[list[dict], dict]:
    """Rows: one per (λ*, λ multiplier, method, schedule, N, seed) with W1, left mass, J-gap, ESS."""
    e = cfg.exp1
    dtype = torch.float32 if e.dtype == "float32" else torch.float64
    rows, truth = [], {}
    jobs = []
    for ls in e.lambda_star:
        for m in e.multipliers:
            for meth in e.sweep_methods:
                jobs.append((ls, m, meth, "linear", int(e.n)))
        for meth in e.ablation_methods:
            if ls in e.ablation_lambdas:
                jobs.append((ls, 1.0, meth, "linear", int(e.n)))
    for ls in e.schedule_lambdas:
        for sch in e.schedules:
            for meth in e.schedule_methods:
                jobs.append((ls, 1.0, meth, sch, int(e.n)))
    for ls in e.n_lambdas:
        for n in e.n_list:
            if n != int(e.n):
                for meth in e.n_methods:
                    jobs.append((ls, 1.0, meth, "linear", int(n)))
    jobs = list(dict.fromkeys(jobs))
    problems = {}
    for ls, m, meth, sch, n in tqdm(jobs, desc="exp1", mininterval=30):
        if sch not in problems:
            problems[sch] = exp1_problem(sch, grid_points=int(e.grid_points))
        p, nu, grid, logp = problems[sch]
        if ls not in truth:
            r_star = MMDReward(nu, lam=float(ls), bandwidth=float(e.bandwidth))
            dens, info = solve_tilt_1d(logp, r_star, grid, return_info=True)
            truth[ls] = {"density": dens, "reward": r_star, "info": info,
                         "j_star": objective(r_star, logp, grid, dens),
                         "left_mass": float(dens[grid < 0].sum() * (grid[1] - grid[0])),
                         "residual": fixed_point_residual(logp, r_star, grid, dens)}
        tr = truth[ls]
        reward = MMDReward(nu, lam=float(ls) * float(m), bandwidth=float(e.bandwidth))
        for seed in seeds:
            s = make_sampler(meth, p, reward, n_steps=int(e.n_steps), device=str(cfg.device))
            wp = s.sample(n, 1, generator=torch.Generator().manual_seed(int(seed)), dtype=dtype)
            rows.append({"exp": "exp1", "lambda_star": float(ls), "mult": float(m), "method": meth, "schedule": sch,
                         "n": n, "seed": int(seed), "w1": weighted_w1(wp, grid, tr["density"]),
                         "left_mass": left_mass(wp), "left_mass_star": tr["left_mass"],
                         "j_gap": tr["j_star"] - objective(tr["reward"], logp, grid, weighted_kde(wp, grid)), "ess": wp.ess,
                         "n_resample": sum(r["resampled"] for r in s.trace),
                         "psi_dot_share": s.timings["psi_dot"] / max(s.timings["total"], 1e-12)})
    return rows, truth


def exp2_problem(d: int):
    """Gaussian prior N(0, C) with a fixed random SPD C (eigenvalues in [0.5, 1.5]); target mean m* = 1.5·1/√d."""
    rng = np.random.default_rng(1234 + d)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    c = q @ np.diag(np.linspace(0.5, 1.5, d)) @ q.T
    c = 0.5 * (c + c.T)
    return np.zeros(d), c, np.full(d, 1.5 / np.sqrt(d))


def run_exp2(cfg, seeds) -> list[dict]:
    e = cfg.exp2
    rows, jobs = [], []
    for d in e.dims:
        for m in e.multipliers:
            for meth in e.sweep_methods:
                jobs.append((d, m, meth, int(e.n)))
        for n in e.n_list:
            for meth in e.n_methods:
                jobs.append((d, 1.0, meth, int(n)))
    jobs = list(dict.fromkeys(jobs))
    for d, m, meth, n in tqdm(jobs, desc="exp2", mininterval=30):
        m0, c0, mt = exp2_problem(int(d))
        p = GaussianMixture([1.0], m0[None], c0[None])
        ms, cs = gaussian_mean_tilt(m0, c0, mt, float(e.lambda_star))
        reward = MeanReward(mt, lam=float(e.lambda_star) * float(m))
        for seed in seeds:
            s = make_sampler(meth, p, reward, n_steps=int(e.n_steps), device=str(cfg.device))
            wp = s.sample(n, int(d), generator=torch.Generator().manual_seed(int(seed)))
            rows.append({"exp": "exp2", "dim": int(d), "mult": float(m), "method": meth, "n": n, "seed": int(seed),
                         "bures": bures(wp, ms, cs), "ess": wp.ess,
                         "n_resample": sum(r["resampled"] for r in s.trace)})
    return rows


__all__ = ["METHODS", "exp1_problem", "exp2_problem", "make_sampler", "run_exp1", "run_exp2"]
