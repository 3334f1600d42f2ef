"""Pieces of the experiments: planners built from one model set, the checks, the maze diagnostics."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import torch

from gtp.envs import GOAL, GOAL_RADIUS, waypoint_controller
from gtp.fit import LearnedModels
from gtp.planners import CEMPlanner, GTPPlanner, MPPIPlanner, PriorPolicy, RandomShootingPlanner


def make_planner(name: str, m: LearnedModels, n: int, cfg) -> object:
    """A planner by name on the models ``m`` with N = ``n`` (knobs from ``cfg.planners``)."""
    pc = cfg.planners
    # the score's discount is the one the value was fitted with
    common = {"n_samples": int(n), "gamma": float(m.info.get("gamma", pc.gamma)), "iterations": int(pc.iterations)}
    if name.startswith("gtp"):
        refine = name.split(":", 1)[1] if ":" in name else pc.gtp.refine
        refine = None if refine in (None, "none", "None") else refine
        return GTPPlanner(m.prior, m.dynamics, m.reward, m.value, refine=refine, elite_frac=float(pc.elite_frac),
                          renoise_start=int(pc.gtp.renoise_start), grad_steps=int(pc.gtp.grad_steps), **common)
    h = {"horizon": m.prior.horizon}
    if name == "mppi":
        return MPPIPlanner(m.dynamics, m.reward, m.value, sigma=float(pc.sigma), temperature=float(pc.temperature),
                           **h, **common)
    if name == "cem":
        return CEMPlanner(m.dynamics, m.reward, m.value, sigma=float(pc.sigma), elite_frac=float(pc.elite_frac),
                          **h, **common)
    if name == "rs":
        return RandomShootingPlanner(m.dynamics, m.reward, m.value, **h, **common)
    if name == "prior":
        return PriorPolicy(m.prior)
    raise ValueError(f"unknown planner {name!r} (gtp, gtp:<refine>, mppi, cem, rs, prior)")


# checks --------------------------------------------------------------------------------------

def ddim_by_hand_error(prior, obs: np.ndarray, seed: int = 0) -> float:
    """Max |diffusers DDIM sample − a hand-written DDIM (η = 0) loop| on the same initial noise."""
    o = torch.as_tensor(np.atleast_2d(obs), dtype=torch.float32)
    x = torch.randn(len(o), prior.horizon * prior.act_dim, generator=torch.Generator().manual_seed(seed))
    on = prior.norm_obs(o)
    with torch.no_grad():
        ref = prior._denoise(x.clone(), on, prior.ddim.timesteps)
        ab = prior.ddpm.alphas_cumprod.double()
        ts = [int(t) for t in prior.ddim.timesteps]
        y = x.double()
        for i, t in enumerate(ts):
            out = prior.eps(y.float(), torch.full((len(y),), t), on).double()
            a_t = ab[t]
            a_prev = ab[ts[i + 1]] if i + 1 < len(ts) else torch.tensor(1.0, dtype=torch.float64)
            if prior.prediction_type == "epsilon":
                eps = out
                x0 = (y - (1 - a_t).sqrt() * eps) / a_t.sqrt()
            else:  # v = √ᾱ ε − √(1−ᾱ) x0
                x0 = a_t.sqrt() * y - (1 - a_t).sqrt() * out
                eps = a_t.sqrt() * out + (1 - a_t).sqrt() * y
            x0 = x0.clamp(-1, 1)  # clip_sample; ε is not recomputed from the clipped x0 (diffusers' default)
            y = a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps
    return float((ref.double() - y).abs().max())


def ensemble_batched_error(dyn, obs: np.ndarray, act: np.ndarray) -> float:
    o, a = torch.as_tensor(obs, dtype=torch.float32), torch.as_tensor(act, dtype=torch.float32)
    with torch.no_grad():
        batched = dyn(o, a)
        single = torch.stack([dyn.member_forward(e, o, a) for e in range(dyn.members)])
    return float((batched - single).abs().max())


def scripted_routes_reach_goal() -> int:
    """How many of the two corridors (left, right) the scripted controller takes to the goal."""
    ok = 0
    for side in (-1.0, 1.0):
        env = gym.make("gtp/TwoCorridorMaze-v0")
        o, _ = env.reset(seed=0)
        xs = []
        for _ in range(200):
            o, r, term, trunc, _ = env.step(waypoint_controller(o, side)[0].astype(np.float32))
            xs.append(o[0])
            if term or trunc:
                break
        ok += bool(term) and np.sign(np.mean(xs)) == side
    return ok


class _Sentinel:
    planning = False
    calls = 0


def env_steps_during_planning(env_id: str, planner, steps: int = 10, seed: int = 0) -> int:
    """Run ``steps`` steps with every ``env.step`` of the env class counted while the planner plans."""
    env = gym.make(env_id)
    cls = type(env.unwrapped)
    orig = cls.step
    sentinel = _Sentinel()

    def step(self, action):
        if sentinel.planning:
            sentinel.calls += 1
        return orig(self, action)

    cls.step = step
    try:
        o, _ = env.reset(seed=seed)
        planner.reset()
        for _ in range(steps):
            sentinel.planning = True
            try:
                a = planner.act(o)
            finally:
                sentinel.planning = False
            o, _, term, trunc, _ = env.step(a)
            if term or trunc:
                break
    finally:
        cls.step = orig
    return sentinel.calls


def save_load_error(m: LearnedModels, path, obs: np.ndarray) -> float:
    """Max |plan before − plan after| a save/load round trip (same planner seed)."""
    m.save(path)
    m2 = LearnedModels.load(path).to(m.prior.obs_mean.device)
    out = []
    for mm in (m, m2):
        p = GTPPlanner(mm.prior, mm.dynamics, mm.reward, mm.value, n_samples=8)
        p.seed(0)
        out.append(p.plan(obs)[0])
    return float(np.abs(out[0] - out[1]).max())


def prior_left_fraction(prior, n: int = 256, seed: int = 0) -> float:
    """Share of prior chunks at the maze start that head into the left corridor (Σ a_x < 0)."""
    g = torch.Generator().manual_seed(seed)
    obs = np.array([0.0, -0.8, 0.0, 0.0], np.float32)
    chunks = prior.sample(obs, n, generator=g)
    return float((chunks[..., 0].sum(-1) < 0).float().mean())


def corridor_of(path: np.ndarray) -> int:
    """-1 / +1: the corridor a maze path went through (sign of x while |y| < 0.5), 0 if neither."""
    mid = np.abs(path[:, 1]) < 0.5
    return 0 if not mid.any() else int(np.sign(path[mid, 0].mean()))


def success_from_paths(paths) -> np.ndarray:
    return np.array([np.linalg.norm(p[-1, :2] - GOAL) < GOAL_RADIUS for p in paths], float)


def clone_models(m: LearnedModels) -> LearnedModels:
    return copy.deepcopy(m)


class RandomPolicy:
    """Uniform random actions with the planners' interface (the floor every planner must beat)."""

    def __init__(self, low, high, seed: int = 0):
        self.low, self.high = np.asarray(low, np.float32), np.asarray(high, np.float32)
        self.rng = np.random.default_rng(seed)

    def reset(self) -> None:
        pass

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        obs = np.atleast_2d(obs)
        return self.rng.uniform(self.low, self.high, size=(len(obs), len(self.low))).astype(np.float32)
