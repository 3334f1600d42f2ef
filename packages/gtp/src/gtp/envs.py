"""``gtp/TwoCorridorMaze-v0``: a 2-D point mass with a sparse goal and two symmetric routes.

The arena is the square [-1, 1]²; a wall block |x| < 0.4, |y| < 0.5 sits between the start
(0, -0.8) and the goal (0, 0.8), leaving a corridor on each side. A straight line from start to
goal runs into the wall, so the task is multimodal: a Gaussian proposal centred between the two
routes averages them into the wall, which is the regime the brief points at.

Dynamics (dt = 0.05, action a ∈ [-1, 1]²)::

    v' = 0.75 v + 0.25 a,        p' = p + dt · v'

A move that would enter the wall or leave the arena is cancelled (p' = p, v' = 0). Reward is 1
when p' is within 0.2 of the goal (the episode then terminates), else 0; the registered
environment is truncated after 200 steps.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

START = np.array([0.0, -0.8])
GOAL = np.array([0.0, 0.8])
GOAL_RADIUS = 0.2
WALL_HALF = np.array([0.4, 0.5])
DT = 0.05
HORIZON = 200


def in_wall(p: np.ndarray) -> np.ndarray:
    """Whether points ``(..., 2)`` lie inside the wall block or outside the arena."""
    p = np.asarray(p)
    inside = (np.abs(p[..., 0]) < WALL_HALF[0]) & (np.abs(p[..., 1]) < WALL_HALF[1])
    outside = np.any(np.abs(p) > 1.0, axis=-1)
    return inside | outside


class TwoCorridorMaze(gym.Env):
    """2-D point mass, sparse goal, two symmetric corridors (see the module docstring).

    Observation: ``(x, y, vx, vy)`` (float32). Action: acceleration ``(ax, ay)`` in [-1, 1]².
    ``reset(options={"start": (x, y)})`` starts elsewhere (used by the tests).
    """

    metadata = {"render_modes": []}

    def __init__(self, start_noise: float = 0.02):
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.start_noise = float(start_noise)
        self._state = np.zeros(4)

    def _obs(self) -> np.ndarray:
        return self._state.astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        start = START if not options or "start" not in options else np.asarray(options["start"], float)
        p = start + self.np_random.uniform(-self.start_noise, self.start_noise, size=2)
        if in_wall(p):
            raise ValueError(f"start {tuple(start)} lies in the wall or outside the arena")
        self._state = np.concatenate([p, np.zeros(2)])
        return self._obs(), {}

    def step(self, action):
        a = np.asarray(action, dtype=float)
        if a.shape != (2,):
            raise ValueError(f"action must have shape (2,), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError("action must be finite")
        a = np.clip(a, -1.0, 1.0)
        p, v = self._state[:2], self._state[2:]
        v2 = 0.75 * v + 0.25 * a
        p2 = p + DT * v2
        if in_wall(p2):
            p2, v2 = p, np.zeros(2)
        self._state = np.concatenate([p2, v2])
        reached = bool(np.linalg.norm(p2 - GOAL) < GOAL_RADIUS)
        return self._obs(), float(reached), reached, False, {"is_success": reached}


def waypoint_controller(obs: np.ndarray, side: np.ndarray, gain: float = 4.0) -> np.ndarray:
    """The scripted controller: steer through the left (side=-1) or right (+1) corridor.

    Waypoints: the corridor's entry (±0.7, -0.6), exit (±0.7, 0.6), then the goal. Batched over
    ``obs (B, 4)`` and ``side (B,)``; returns actions ``(B, 2)`` in [-1, 1].
    """
    obs = np.atleast_2d(obs)
    side = np.broadcast_to(np.asarray(side, float), (obs.shape[0],))
    p, v = obs[:, :2], obs[:, 2:]
    target = np.tile(GOAL, (len(p), 1))
    below = p[:, 1] < -0.5
    outside_corridor = np.abs(p[:, 0]) < 0.55
    low = below & outside_corridor
    mid = (p[:, 1] < 0.55) & ~low
    target[low] = np.stack([0.7 * side[low], np.full(low.sum(), -0.6)], 1)
    target[mid] = np.stack([0.7 * side[mid], np.full(mid.sum(), 0.65)], 1)
    return np.clip(gain * (target - p) - 1.5 * v, -1.0, 1.0)
