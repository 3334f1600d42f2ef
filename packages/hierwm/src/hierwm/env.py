"""``hierwm/ToyDriving-v0``: a two-lane top-down driving simulator with 16×16 semantic rasters.

The ego car sits at a fixed row near the bottom of the view and moves laterally under steering; its
speed changes under the second action. ``n_cars`` other cars keep a lane and a near-constant speed;
their screen row moves by the speed difference to the ego (they wrap around the view). Frames have
three channels (road, cars, ego) with values in {0, 1}; the true object states are kept.

State vector (11 numbers for 3 cars): ``[ego_x, ego_v, car_x × n, car_y × n, car_u × n]``.
Dynamics per step, with action ``(steer, accel)`` in ``[-1, 1]²``::

    ego_x ← clip(ego_x + 0.75·steer, 5, 11)      ego_v ← clip(ego_v + 0.25·accel, 0.5, 1.5)
    car_u ← clip(car_u + N(0, 0.02²), 0.6, 1.4)  car_y ← wrap(car_y + 1.5·(ego_v − car_u))
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

RASTER = 16  # simulator resolution (frames of other sizes are max-pooled from it)
ROAD = (4.0, 12.0)
LANES = (6.0, 10.0)
EGO_ROW = 12.0
X_BOUNDS = (5.0, 11.0)
V_BOUNDS = (0.5, 1.5)
U_BOUNDS = (0.6, 1.4)
STEER_GAIN, ACCEL_GAIN, ROW_GAIN = 0.75, 0.25, 1.5
WRAP = (-2.0, 18.0)


def initial_state(rng: np.random.Generator, n: int, n_cars: int = 3) -> np.ndarray:
    """``n`` random initial states, shape ``(n, 2 + 3·n_cars)``."""
    ego_x = rng.uniform(*X_BOUNDS, size=(n, 1))
    ego_v = rng.uniform(0.8, 1.2, size=(n, 1))
    car_x = np.asarray(LANES)[rng.integers(0, 2, size=(n, n_cars))]
    car_y = rng.uniform(*WRAP, size=(n, n_cars))
    car_u = rng.uniform(*U_BOUNDS, size=(n, n_cars))
    return np.concatenate([ego_x, ego_v, car_x, car_y, car_u], axis=1)


def step_state(state: np.ndarray, action: np.ndarray, rng: np.random.Generator | None, n_cars: int = 3) -> np.ndarray:
    """One simulator step for a batch of states ``(n, 2+3k)`` and actions ``(n, 2)``."""
    s = state.copy()
    a = np.clip(action, -1.0, 1.0)
    s[:, 0] = np.clip(s[:, 0] + STEER_GAIN * a[:, 0], *X_BOUNDS)
    s[:, 1] = np.clip(s[:, 1] + ACCEL_GAIN * a[:, 1], *V_BOUNDS)
    u = s[:, 2 + 2 * n_cars:2 + 3 * n_cars]
    if rng is not None:
        u = np.clip(u + rng.normal(0.0, 0.02, size=u.shape), *U_BOUNDS)
    s[:, 2 + 2 * n_cars:] = u
    y = s[:, 2 + n_cars:2 + 2 * n_cars] + ROW_GAIN * (s[:, 1:2] - u)
    lo, hi = WRAP
    s[:, 2 + n_cars:2 + 2 * n_cars] = (y - lo) % (hi - lo) + lo
    return s


def render(state: np.ndarray, size: int = RASTER, n_cars: int = 3) -> np.ndarray:
    """Semantic rasters ``(n, 3, size, size)`` (uint8: road, cars, ego) of states ``(n, 2+3k)``."""
    if RASTER % size:
        raise ValueError(f"size must divide {RASTER}, got {size}")
    n = state.shape[0]
    c = np.arange(RASTER) + 0.5
    out = np.zeros((n, 3, RASTER, RASTER), dtype=bool)
    out[:, 0, :, int(ROAD[0]):int(ROAD[1])] = True

    def box(x, y):  # (n, k) centres -> (n, k, R, R) occupancy of 2-wide, 3-tall boxes
        cols = np.abs(c[None, None, None, :] - x[..., None, None]) < 1.0
        rows = np.abs(c[None, None, :, None] - y[..., None, None]) < 1.5
        return rows & cols

    cars = box(state[:, 2:2 + n_cars], state[:, 2 + n_cars:2 + 2 * n_cars])
    out[:, 1] = cars.any(axis=1)
    out[:, 2] = box(state[:, 0:1], np.full((n, 1), EGO_ROW))[:, 0]
    if size != RASTER:
        f = RASTER // size
        out = out.reshape(n, 3, size, f, size, f).any(axis=(3, 5))
    return out.astype(np.uint8)


def random_actions(rng: np.random.Generator, n: int, length: int) -> np.ndarray:
    """Smooth random driving actions ``(n, length, 2)``: AR(1) steering and acceleration in [-1, 1]."""
    a = np.zeros((n, length, 2))
    cur = rng.uniform(-1, 1, size=(n, 2))
    for t in range(length):
        cur = np.clip(0.7 * cur + 0.6 * rng.normal(size=(n, 2)), -1.0, 1.0)
        a[:, t] = cur
    return a


def simulate(state0: np.ndarray, actions: np.ndarray, rng: np.random.Generator | None, n_cars: int = 3) -> np.ndarray:
    """States ``(n, T, d)`` from ``state0`` under ``actions (n, T, 2)``: ``states[:, t+1] = step(states[:, t], a_t)``.

    The last action is not applied (it would lead to frame ``T``)."""
    n, length, _ = actions.shape
    states = np.zeros((n, length, state0.shape[1]))
    states[:, 0] = state0
    for t in range(1, length):
        states[:, t] = step_state(states[:, t - 1], actions[:, t - 1], rng, n_cars)
    return states


class ToyDrivingEnv(gym.Env):
    """Gymnasium environment: observation ``(3, size, size)`` float32 raster in [0, 1], action ``(steer, accel)``.

    Reward: the ego speed, minus 1 on overlap with another car. ``info["state"]`` carries the true state.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 8}

    def __init__(self, *, size: int = RASTER, n_cars: int = 3, render_mode: str | None = None):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1 or RASTER % size:
            raise ValueError(f"size must be a divisor of {RASTER}, got {size!r}")
        if isinstance(n_cars, bool) or not isinstance(n_cars, int) or n_cars < 1:
            raise ValueError(f"n_cars must be a positive int, got {n_cars!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.size, self.n_cars, self.render_mode = size, n_cars, render_mode
        self.observation_space = spaces.Box(0.0, 1.0, (3, size, size), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self._state = None

    def _obs(self):
        return render(self._state, self.size, self.n_cars)[0].astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._state = initial_state(self.np_random, 1, self.n_cars)
        return self._obs(), {"state": self._state[0].copy()}

    def step(self, action):
        a = np.asarray(action, dtype=float).reshape(1, 2)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"action must be finite, got {action!r}")
        self._state = step_state(self._state, a, self.np_random, self.n_cars)
        obs = self._obs()
        crash = bool((obs[1] * obs[2]).sum() > 0)
        reward = float(self._state[0, 1]) - (1.0 if crash else 0.0)
        return obs, reward, False, False, {"state": self._state[0].copy(), "collision": crash}

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        obs = render(self._state, self.size, self.n_cars)[0]
        rgb = np.full((self.size, self.size, 3), 40, dtype=np.uint8)
        rgb[obs[0] > 0] = (110, 110, 110)
        rgb[obs[1] > 0] = (220, 60, 60)
        rgb[obs[2] > 0] = (60, 200, 255)
        return rgb


def register() -> None:
    if "hierwm/ToyDriving-v0" not in gym.registry:
        gym.register(id="hierwm/ToyDriving-v0", entry_point="hierwm.env:ToyDrivingEnv", max_episode_steps=24)
