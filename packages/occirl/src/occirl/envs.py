"""Gymnasium environments over tabular MDPs, with seals' tabular attributes.

``occirl/TabularMDP-v0`` (user ``P``, ``R``, ``gamma``, ``p0``), ``occirl/GridWorld-v0`` (n × n, slip) and
``occirl/Garnet-v0`` (S, A, branching, seed). Each exposes ``transition_matrix`` ``(S, A, S)``,
``reward_matrix``, ``initial_state_dist``, ``horizon``, ``observation_matrix`` (one-hot), ``state_dim``,
``obs_dim``, ``n_actions`` and ``gamma``, so that ``imitation``'s MCE code reads them as it reads seals'
``TabularModelPOMDP`` (whose own classes fail gymnasium 1.x's ``check_env``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from occirl.mdp import validate_mdp
from paperworks.utils import check_float, check_int

__all__ = ["TabularMDPEnv", "GridWorldEnv", "GarnetEnv", "gridworld_mdp", "garnet_mdp"]


def gridworld_mdp(n: int, slip: float):
    """An ``n × n`` grid, actions up/down/left/right; with probability ``slip`` a uniformly random action."""
    n = check_int(n, "n", minimum=2)
    slip = check_float(slip, "slip", minimum=0.0, maximum=1.0)
    S, moves = n * n, [(-1, 0), (1, 0), (0, -1), (0, 1)]
    det = np.zeros((S, 4, S))
    for s in range(S):
        i, j = divmod(s, n)
        for a, (di, dj) in enumerate(moves):
            ii, jj = min(max(i + di, 0), n - 1), min(max(j + dj, 0), n - 1)
            det[s, a, ii * n + jj] = 1.0
    return (1 - slip) * det + slip * det.mean(1, keepdims=True)


def garnet_mdp(n_states: int, n_actions: int, branching: int, rng: np.random.Generator):
    """A Garnet MDP: each ``(s, a)`` moves to ``branching`` random states with Dirichlet(1) weights."""
    S = check_int(n_states, "n_states")
    A = check_int(n_actions, "n_actions")
    b = check_int(branching, "branching", maximum=S)
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            nxt = rng.choice(S, size=b, replace=False)
            P[s, a, nxt] = rng.dirichlet(np.ones(b))
    return P


class TabularMDPEnv(gym.Env):
    """A tabular MDP as a gymnasium env (one-hot-free: observations are state indices).

    Args:
        P: transitions ``(S, A, S)``; R: reward ``(S, A)`` or state-only ``(S,)``; gamma: discount in [0, 1];
        p0: initial distribution ``(S,)`` (default uniform); horizon: episode length (truncation).
    """

    metadata = {"render_modes": []}

    def __init__(self, P, R, gamma=0.95, p0=None, horizon: int = 100):
        horizon = check_int(horizon, "horizon")
        gamma = check_float(gamma, "gamma", minimum=0.0, maximum=1.0)
        P = np.asarray(P, dtype=float)
        S = P.shape[0] if P.ndim == 3 else 0
        R = np.asarray(R, dtype=float)
        if R.ndim == 1 and P.ndim == 3:
            if R.shape != (S,):
                raise ValueError(f"R must have shape (S,) or (S, A), got {R.shape}")
            R2 = np.repeat(R[:, None], P.shape[1], 1)
        else:
            R2 = R
        p0 = np.full(S, 1.0 / max(S, 1)) if p0 is None else p0
        P, R2, p0, _, _ = validate_mdp(P, R2, p0, gamma=gamma, horizon=horizon)
        self.transition_matrix, self.reward_sa, self.initial_state_dist = P, R2, p0
        self.reward_matrix = R if R.ndim == 1 else R2  # seals: state-only rewards are (S,)
        self.gamma, self.horizon = gamma, horizon
        self.state_dim, self.n_actions = P.shape[0], P.shape[1]
        self.action_dim = self.n_actions
        self.obs_dim = self.state_dim
        self.observation_matrix = np.eye(self.state_dim)
        self.observation_space = spaces.Discrete(self.state_dim)
        self.action_space = spaces.Discrete(self.n_actions)
        self._state, self._t = 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._state = int(self.np_random.choice(self.state_dim, p=self.initial_state_dist))
        self._t = 0
        return self._state, {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action must be in [0, {self.n_actions}), got {action!r}")
        s, a = self._state, int(action)
        reward = float(self.reward_sa[s, a])
        self._state = int(self.np_random.choice(self.state_dim, p=self.transition_matrix[s, a]))
        self._t += 1
        return self._state, reward, False, self._t >= self.horizon, {}


class GridWorldEnv(TabularMDPEnv):
    """``occirl/GridWorld-v0``: n × n grid with slip; reward +1 in the far corner unless ``R`` is given."""

    def __init__(self, n: int = 10, slip: float = 0.1, R=None, gamma: float = 0.95, horizon: int = 100):
        P = gridworld_mdp(n, slip)
        S = n * n
        R = np.eye(S)[S - 1] if R is None else R
        p0 = np.eye(S)[0]
        super().__init__(P, R, gamma=gamma, p0=p0, horizon=horizon)


class GarnetEnv(TabularMDPEnv):
    """``occirl/Garnet-v0``: random Garnet(S, A, branching) with a Gaussian state–action reward."""

    def __init__(self, n_states: int = 50, n_actions: int = 4, branching: int = 5, seed: int = 0,
                 gamma: float = 0.95, horizon: int = 100):
        rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
        P = garnet_mdp(n_states, n_actions, branching, rng)
        R = rng.normal(size=(n_states, n_actions))
        super().__init__(P, R, gamma=gamma, p0=np.full(n_states, 1.0 / n_states), horizon=horizon)


def register_envs() -> None:
    for name, cls in (("TabularMDP", TabularMDPEnv), ("GridWorld", GridWorldEnv), ("Garnet", GarnetEnv)):
        eid = f"occirl/{name}-v0"
        if eid not in gym.registry:
            gym.register(id=eid, entry_point=f"occirl.envs:{cls.__name__}")


register_envs()
