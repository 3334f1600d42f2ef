"""Gymnasium environments of the CPU miniature: ``latentwam/Intercept-v0`` and ``latentwam/Reach-v0``.

Both render 24×24 RGB frames (channel 0: the ball, 1: the effector, 2: the static target) as
anti-aliased Gaussian blobs, so positions are recoverable to sub-pixel precision. The observation
is a dict: ``frames`` (2, 3, S, S) uint8, the last two frames (the first reset frame repeated), and
``proprio`` (2,) float32, the effector's position in [0, 1]². The action is the effector's velocity
in units of its top speed, a Box(-1, 1, (2,)).

* **Intercept**: a ball moves at 0.05–0.08 per step (faster than the effector's 0.04) and bounces
  off the walls. Success: the effector comes within 0.07 of the ball within 30 steps. Chasing the
  ball's current position is too slow; one has to aim where the ball will be (anticipation).
* **Reach** (the control): a static target; success within 0.05 of it. The future is useless.

The scripted expert plans on the true state: it finds the earliest step k at which the ball's
(bouncing) position is reachable and heads there at full speed.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

SPEED = 0.04  # effector top speed per step
BALL_SPEED = (0.05, 0.08)
CATCH_RADIUS = 0.07
REACH_RADIUS = 0.05
START = np.array([0.5, 0.12])


def render_frame(ball, effector, target, size: int = 24, sigma: float = 0.9) -> np.ndarray:
    """One (3, size, size) uint8 frame; any position may be ``None`` (channel left dark)."""
    c = (np.arange(size) + 0.5) / size
    out = np.zeros((3, size, size), dtype=np.float64)
    s2 = 2.0 * (sigma / size) ** 2
    for ch, p in enumerate((ball, effector, target)):
        if p is None:
            continue
        gx = np.exp(-((c - p[0]) ** 2) / s2)
        gy = np.exp(-((c - p[1]) ** 2) / s2)
        out[ch] = np.outer(gy[::-1], gx)  # row 0 is the top (y = 1)
    return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)


def ball_path(pos, vel, k: int) -> np.ndarray:
    """The ball's positions after 1..k steps (reflecting walls), shape (k, 2)."""
    pos, vel = np.array(pos, float), np.array(vel, float)
    out = np.empty((k, 2))
    for i in range(k):
        pos, vel = _ball_step(pos, vel)
        out[i] = pos
    return out


def _ball_step(pos, vel):
    pos = pos + vel
    for d in range(2):
        if pos[d] < 0.0:
            pos[d], vel[d] = -pos[d], -vel[d]
        elif pos[d] > 1.0:
            pos[d], vel[d] = 2.0 - pos[d], -vel[d]
    return pos, vel


class _Base(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, max_steps: int = 30, image_size: int = 24,
                 terminate_on_success: bool = True):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
        if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 8:
            raise ValueError(f"image_size must be an int >= 8, got {image_size!r}")
        self.render_mode, self.max_steps, self.image_size = render_mode, max_steps, image_size
        self.terminate_on_success = bool(terminate_on_success)
        s = image_size
        self.observation_space = spaces.Dict({
            "frames": spaces.Box(0, 255, (2, 3, s, s), dtype=np.uint8),
            "proprio": spaces.Box(0.0, 1.0, (2,), dtype=np.float32),
        })
        self.action_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)

    # the task -------------------------------------------------------------------------------
    def _init_task(self):
        raise NotImplementedError

    def _advance_task(self):
        raise NotImplementedError

    def _reached(self) -> bool:
        raise NotImplementedError

    def _positions(self):
        raise NotImplementedError

    def expert_action(self) -> np.ndarray:
        raise NotImplementedError

    # gymnasium API ----------------------------------------------------------------------------
    def _frame(self):
        return render_frame(*self._positions(), size=self.image_size)

    def _obs(self):
        return {"frames": np.stack([self._prev, self._cur]), "proprio": self.effector.astype(np.float32)}

    def state(self) -> dict:
        """The true state (for the expert, probes and tests)."""
        b, e, t = self._positions()
        return {"ball": None if b is None else np.array(b), "effector": self.effector.copy(),
                "target": None if t is None else np.array(t), "t": self.t}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.success = 0, False
        self.effector = START.copy()
        self._init_task()
        self._cur = self._frame()
        self._prev = self._cur
        return self._obs(), {"success": False}

    def step(self, action):
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (2,):
            raise ValueError(f"action must have shape (2,), got {a.shape}")
        if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1.0 + 1e-6):
            raise ValueError(f"action must be finite and inside the action space [-1, 1]^2, got {a.tolist()}")
        self.effector = np.clip(self.effector + SPEED * a, 0.0, 1.0)
        self._advance_task()
        self.t += 1
        hit = self._reached()
        reward = 1.0 if hit and not self.success else 0.0
        self.success = self.success or hit
        self._prev, self._cur = self._cur, self._frame()
        terminated = bool(hit and self.terminate_on_success)
        truncated = bool(self.t >= self.max_steps and not terminated)
        return self._obs(), reward, terminated, truncated, {"success": self.success}

    def render(self):
        if self.render_mode == "rgb_array":
            return np.ascontiguousarray(np.transpose(self._cur, (1, 2, 0)))
        return None


class InterceptEnv(_Base):
    """Intercept a bouncing ball that is faster than the effector (anticipation needed)."""

    def _init_task(self):
        r = self.np_random
        self.ball = np.array([r.uniform(0.05, 0.95), r.uniform(0.45, 0.95)])
        ang, spd = r.uniform(0, 2 * np.pi), r.uniform(*BALL_SPEED)
        self.vel = spd * np.array([np.cos(ang), np.sin(ang)])

    def _advance_task(self):
        self.ball, self.vel = _ball_step(self.ball, self.vel)

    def _reached(self):
        return bool(np.linalg.norm(self.ball - self.effector) <= CATCH_RADIUS)

    def _positions(self):
        return self.ball, self.effector, None

    def expert_action(self) -> np.ndarray:
        path = ball_path(self.ball, self.vel, 40)
        k = np.arange(1, 41)
        ok = np.linalg.norm(path - self.effector, axis=1) <= SPEED * k + 0.5 * CATCH_RADIUS
        aim = path[int(np.argmax(ok))] if ok.any() else path[0]
        return _towards(self.effector, aim)

    def chase_action(self) -> np.ndarray:
        """The myopic heuristic: head for the ball's current position."""
        return _towards(self.effector, self.ball)


class ReachEnv(_Base):
    """Reach a static target (the control: nothing about the future is needed)."""

    def _init_task(self):
        self.target = self.np_random.uniform(0.05, 0.95, size=2)

    def _advance_task(self):
        pass

    def _reached(self):
        return bool(np.linalg.norm(self.target - self.effector) <= REACH_RADIUS)

    def _positions(self):
        return None, self.effector, self.target

    def expert_action(self) -> np.ndarray:
        return _towards(self.effector, self.target)

    chase_action = expert_action


def _towards(src, dst) -> np.ndarray:
    d = np.asarray(dst) - np.asarray(src)
    n = float(np.linalg.norm(d))
    if n <= SPEED:
        return (d / SPEED).astype(np.float32)
    return (d / n).astype(np.float32)


ENV_IDS = ("latentwam/Intercept-v0", "latentwam/Reach-v0")


def register_envs() -> None:
    """Register the two environments with gymnasium (idempotent; done on ``import latentwam``)."""
    for env_id, cls in zip(ENV_IDS, ("InterceptEnv", "ReachEnv"), strict=True):
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=f"latentwam.envs:{cls}", max_episode_steps=None)


def make(env_id: str, **kwargs) -> _Base:
    """``gymnasium.make(env_id).unwrapped`` with a clear error for an unknown id."""
    register_envs()
    if not isinstance(env_id, str) or env_id not in ENV_IDS:
        raise ValueError(f"env_id must be one of {ENV_IDS}, got {env_id!r}")
    return gym.make(env_id, **kwargs).unwrapped
