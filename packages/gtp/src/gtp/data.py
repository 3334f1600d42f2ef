"""Datasets: generation by a noisy scripted controller mixed with random actions, loading and
validation of D4RL-style dicts / ``.npz`` files, and action chunks for the prior.

A dataset is a dict of arrays with D4RL's key names: ``observations (N, d)``, ``actions (N, a)``,
``rewards (N,)``, ``next_observations (N, d)``, ``terminals (N,)`` and optionally ``timeouts (N,)``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import gymnasium as gym
import numpy as np

from gtp.envs import waypoint_controller

log = logging.getLogger(__name__)
KEYS = ("observations", "actions", "rewards", "next_observations", "terminals")


def pendulum_controller(obs: np.ndarray) -> np.ndarray:
    """Energy-pumping swing-up with a PD catch near the top (Pendulum-v1 units, torque in [-2, 2]).

    Pendulum-v1 obeys θ̈ = 15 sin θ + 3u, so E = ½θ̇² + 15(cos θ − 1) is 0 at the upright rest point
    and dE/dt = 3uθ̇: pumping u = 2 sign(θ̇) raises the energy.
    """
    obs = np.atleast_2d(obs)
    c, s, w = obs[:, 0], obs[:, 1], obs[:, 2]
    th = np.arctan2(s, c)
    energy = 0.5 * w**2 + 15.0 * (c - 1.0)
    pump = np.where(energy < 0, 2.0 * np.sign(w + 1e-6), 0.0)
    u = np.where(c > 0.85, -10.0 * th - 2.0 * w, pump)
    return np.clip(u, -2.0, 2.0)[:, None]


def scripted_action(env_id: str, obs: np.ndarray, rng: np.random.Generator, side=None) -> np.ndarray:
    if env_id == "Pendulum-v1":
        return pendulum_controller(obs)
    return waypoint_controller(obs, side)


def generate_dataset(env_id: str, n: int = 50_000, *, random_frac: float = 0.3, noise: float = 0.3,
                     seed: int = 0, max_episode_steps: int = 200) -> dict[str, np.ndarray]:
    """``n`` transitions of a noisy scripted controller mixed with uniform random actions.

    Each step takes a uniform random action with probability ``random_frac``, otherwise the
    scripted action plus Gaussian noise of std ``noise`` × half the action range. Maze episodes
    choose a corridor at random (half left, half right), so the data are bimodal.
    """
    if not 0.0 <= random_frac <= 1.0:
        raise ValueError(f"random_frac must be in [0, 1], got {random_frac}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    env = gym.make(env_id, max_episode_steps=max_episode_steps)
    low, high = env.action_space.low, env.action_space.high
    buf = {k: [] for k in (*KEYS, "timeouts")}
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    side = rng.choice([-1.0, 1.0])
    while len(buf["rewards"]) < n:
        if rng.random() < random_frac:
            a = rng.uniform(low, high)
        else:
            a = scripted_action(env_id, obs, rng, side)[0] + rng.normal(0, noise * (high - low) / 2)
        a = np.clip(a, low, high).astype(np.float32)
        obs2, r, term, trunc, _ = env.step(a)
        for k, v in zip(KEYS, (obs, a, r, obs2, term)):
            buf[k].append(v)
        buf["timeouts"].append(trunc)
        obs = obs2
        if term or trunc:
            obs, _ = env.reset(seed=int(rng.integers(2**31)))
            side = rng.choice([-1.0, 1.0])
    env.close()
    return {k: np.asarray(v, dtype=np.float32 if k not in ("terminals", "timeouts") else bool)
            for k, v in buf.items()}


def load_dataset(source) -> dict[str, np.ndarray]:
    """A dataset from a dict of arrays or an ``.npz`` path, validated (see :func:`validate_dataset`)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"dataset file {path} does not exist")
        if path.suffix != ".npz":
            raise ValueError(f"dataset file must be .npz with keys {KEYS}, got {path.name}")
        with np.load(path, allow_pickle=False) as z:
            source = {k: z[k] for k in z.files}
    if not isinstance(source, dict):
        raise TypeError(f"dataset must be a dict of arrays or an .npz path, got {type(source).__name__}")
    return validate_dataset(source)[0]


def validate_dataset(d: dict) -> tuple[dict[str, np.ndarray], int]:
    """Check keys, shapes and lengths; drop transitions with non-finite values.

    Returns the cleaned dataset and the number of skipped transitions (logged with their indices).
    """
    missing = [k for k in KEYS if k not in d]
    if missing:
        raise ValueError(f"dataset is missing keys {missing} (needs {list(KEYS)})")
    out = {k: np.asarray(d[k]) for k in (*KEYS, "timeouts") if k in d}
    for k, v in out.items():
        if v.dtype.kind not in "fiub":
            raise TypeError(f"dataset[{k!r}] must be numeric, got dtype {v.dtype}")
    n = len(out["observations"])
    lengths = {k: len(v) for k, v in out.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"dataset arrays have mismatched lengths: {lengths}")
    if n == 0:
        raise ValueError("dataset is empty")
    obs, nxt = out["observations"], out["next_observations"]
    if obs.ndim != 2 or nxt.shape != obs.shape:
        raise ValueError(f"observations and next_observations must be (N, d) alike, got {obs.shape}, {nxt.shape}")
    if out["actions"].ndim == 1:
        out["actions"] = out["actions"][:, None]
    if out["actions"].ndim != 2:
        raise ValueError(f"actions must be (N, a), got {out['actions'].shape}")
    for k in ("rewards", "terminals", "timeouts"):
        if k in out:
            out[k] = out[k].reshape(n, -1)
            if out[k].shape[1] != 1:
                raise ValueError(f"{k} must be (N,), got {np.asarray(d[k]).shape}")
            out[k] = out[k][:, 0]
    finite = np.ones(n, bool)
    for k in ("observations", "actions", "rewards", "next_observations"):
        v = out[k].astype(np.float64)
        finite &= np.isfinite(v).reshape(n, -1).all(1)
    skipped = int((~finite).sum())
    if skipped:
        bad = np.flatnonzero(~finite)
        log.warning("skipped %d transition(s) with non-finite values (indices %s%s)", skipped,
                    bad[:10].tolist(), " ..." if skipped > 10 else "")
        if skipped == n:
            raise ValueError("every transition has non-finite values")
    clean = {k: v[finite] for k, v in out.items()}
    for k in ("observations", "actions", "rewards", "next_observations"):
        clean[k] = clean[k].astype(np.float32)
    clean["terminals"] = clean["terminals"].astype(bool)
    if "timeouts" in clean:
        clean["timeouts"] = clean["timeouts"].astype(bool)
    clean["skipped"] = np.asarray(skipped)
    return clean, skipped


def episode_ends(d: dict) -> np.ndarray:
    """Boolean ``(N,)``: transition i ends an episode (terminal, timeout, or the next row does not continue it)."""
    n = len(d["observations"])
    end = d["terminals"].astype(bool).copy()
    if "timeouts" in d:
        end |= d["timeouts"].astype(bool)
    cont = np.zeros(n, bool)
    cont[:-1] = np.all(np.isclose(d["next_observations"][:-1], d["observations"][1:], atol=1e-6), axis=1)
    end |= ~cont
    return end


def action_chunks(d: dict, horizon: int) -> np.ndarray:
    """``(N, H, a)``: the ``horizon`` actions from each transition on, within its episode.

    Near an episode's end the chunk is padded by repeating the episode's last action.
    """
    acts, end = d["actions"], episode_ends(d)
    n = len(acts)
    # index of the last transition of each row's episode
    last = np.empty(n, dtype=np.int64)
    cur = n - 1
    for i in range(n - 1, -1, -1):
        if end[i]:
            cur = i
        last[i] = cur
    idx = np.minimum(np.arange(n)[:, None] + np.arange(horizon)[None], last[:, None])
    return acts[idx]


def save_dataset(d: dict, path) -> Path:
    path = Path(path)
    np.savez_compressed(path, **{k: v for k, v in d.items() if k != "skipped"})
    return path


def n_step_targets(d: dict, gamma: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n-step TD pieces within episodes: for each transition i,

    G_i = Σ_{k<m} γ^k r_{i+k},  bootstrap state s'_{i+m-1},  discount γ^m (0 if the episode terminated),

    with m = min(n, steps to the episode's end). ``n = 1`` gives the one-step TD target.
    """
    r, end, term = d["rewards"].astype(np.float64), episode_ends(d), d["terminals"].astype(bool)
    N = len(r)
    ret, disc = np.zeros(N), np.ones(N)
    last = np.arange(N)
    alive = np.ones(N, bool)
    for k in range(n):
        j = np.minimum(np.arange(N) + k, N - 1)
        ret[alive] += disc[alive] * r[j[alive]]
        disc[alive] *= gamma
        last[alive] = j[alive]
        alive &= ~end[j] & (np.arange(N) + k + 1 < N)
    disc[term[last]] = 0.0
    return ret.astype(np.float32), d["next_observations"][last], disc.astype(np.float32)
