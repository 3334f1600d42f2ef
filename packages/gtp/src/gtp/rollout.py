"""``evaluate``: run a planner in vectorised copies of an environment (episodes in lockstep)."""

from __future__ import annotations

import copy
import time

import gymnasium as gym
import numpy as np


def _make_envs(env, episodes: int) -> list[gym.Env]:
    if isinstance(env, str):
        return [gym.make(env) for _ in range(episodes)]
    if isinstance(env, gym.Env):
        return [copy.deepcopy(env) for _ in range(episodes)]
    if callable(env):
        return [env() for _ in range(episodes)]
    raise TypeError(f"env must be an environment id, a gymnasium.Env or a factory, got {type(env).__name__}")


def evaluate(env, planner, episodes: int = 10, seed: int | None = None, *, max_steps: int | None = None,
             record_paths: bool = False) -> dict:
    """Return, success and planning time of ``planner`` over ``episodes`` episodes, run as one batch.

    All episodes step in lockstep; the planner is called once per step on the batch of
    observations ``(episodes, obs_dim)``. Finished episodes are no longer stepped.

    Args:
        env: an environment id, a ``gymnasium.Env`` (deep-copied per episode) or a factory.
        planner: anything with ``plan``/``act``/``reset`` (GTP, the baselines, TD3+BC).
        episodes: episodes (≥ 1). seed: reset seeds ``seed, seed + 1, ...``.

    Returns:
        dict with ``returns``, ``success`` and ``lengths`` (arrays over episodes), ``plan_ms``
        (mean planning time per step) and, with ``record_paths``, the observations ``paths``.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    envs = _make_envs(env, int(episodes))
    space = envs[0].action_space
    if not isinstance(space, gym.spaces.Box):
        raise TypeError(f"gtp plans continuous actions: the action space must be a Box, got {type(space).__name__}")
    obs = np.stack([e.reset(seed=None if seed is None else int(seed) + i)[0] for i, e in enumerate(envs)])
    planner.reset()
    if seed is not None and hasattr(planner, "seed"):
        planner.seed(seed)
    n = len(envs)
    ret, succ, length = np.zeros(n), np.zeros(n, bool), np.zeros(n, int)
    active = np.ones(n, bool)
    paths = [[o.copy()] for o in obs]
    plan_t, steps = 0.0, 0
    limit = max_steps or 10**9
    while active.any() and steps < limit:
        t0 = time.perf_counter()
        act = planner.act(obs)
        plan_t += time.perf_counter() - t0
        steps += 1
        for i in np.flatnonzero(active):
            o, r, term, trunc, info = envs[i].step(np.clip(act[i], space.low, space.high).astype(space.dtype))
            obs[i] = o
            ret[i] += r
            length[i] += 1
            succ[i] |= bool(info.get("is_success", False))
            if record_paths:
                paths[i].append(np.asarray(o).copy())
            if term or trunc:
                active[i] = False
    for e in envs:
        e.close()
    out = {"returns": ret, "success": succ.astype(float), "lengths": length, "plan_ms": 1e3 * plan_t / max(steps, 1)}
    if record_paths:
        out["paths"] = [np.asarray(p) for p in paths]
    return out
