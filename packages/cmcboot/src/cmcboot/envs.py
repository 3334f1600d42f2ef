"""RiverSwim and a generic finite MDP as registered ``gymnasium`` environments.

RiverSwim (Strehl & Littman 2008): a river of ``n_states`` cells; action 0 (*left*, with the
current) moves one cell left for sure; action 1 (*right*, against the current) moves right with
probability ``p_forward``, stays with ``p_stay`` and is pushed back with ``p_back``
(``swim_probs = (p_back, p_stay, p_forward)``). At the banks the impossible move becomes a stay:
at cell 0 swimming right stays with ``p_back + p_stay``; at the last cell it stays with
``p_stay + p_forward``. Rewards: ``small_reward`` for *left* in cell 0, ``large_reward`` for
*right* in the last cell, 0 elsewhere (expected rewards of (s, a)).

Public implementations differ, hence :data:`VARIANTS`:

- ``"table-rl"``: rewards 5 / 10000, swim probabilities (0.05, 0.6, 0.35) (the default);
- ``"psrl"``: rewards 0.005 / 1, same swim probabilities.

``current=False`` drops the back-drift (``p_back`` is added to ``p_stay``) — our reading of
the variant without a current; pass ``swim_probs`` to match any other implementation.

Registered ids: ``cmcboot/RiverSwim-v0`` and ``cmcboot/FiniteMDP-v0``::

    env = gymnasium.make("cmcboot/RiverSwim-v0", n_states=6, variant="psrl")
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from cmcboot.mdp import check_kernel, check_rewards

VARIANTS = {
    "table-rl": {"small_reward": 5.0, "large_reward": 10000.0, "swim_probs": (0.05, 0.6, 0.35)},
    "psrl": {"small_reward": 0.005, "large_reward": 1.0, "swim_probs": (0.05, 0.6, 0.35)},
}
LEFT, RIGHT = 0, 1


def riverswim(n_states: int = 6, *, variant: str = "table-rl", small_reward: float | None = None,
              large_reward: float | None = None, swim_probs=None, current: bool = True
              ) -> tuple[np.ndarray, np.ndarray]:
    """The RiverSwim kernel ``P`` (``(S, 2, S)``) and expected rewards ``R`` (``(S, 2)``).

    Explicit ``small_reward``/``large_reward``/``swim_probs`` override the ``variant``'s.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    if isinstance(n_states, bool) or not isinstance(n_states, (int, np.integer)) or n_states < 2:
        raise ValueError(f"n_states must be an integer >= 2, got {n_states!r}")
    spec = VARIANTS[variant]
    small = spec["small_reward"] if small_reward is None else float(small_reward)
    large = spec["large_reward"] if large_reward is None else float(large_reward)
    p_back, p_stay, p_fwd = (float(p) for p in (spec["swim_probs"] if swim_probs is None else swim_probs))
    if min(p_back, p_stay, p_fwd) < 0 or abs(p_back + p_stay + p_fwd - 1.0) > 1e-9:
        raise ValueError(f"swim_probs must be three non-negative numbers summing to 1, got {swim_probs}")
    if not current:
        p_back, p_stay = 0.0, p_stay + p_back
    S = int(n_states)
    P = np.zeros((S, 2, S))
    for s in range(S):
        P[s, LEFT, max(s - 1, 0)] = 1.0
        P[s, RIGHT, max(s - 1, 0)] += p_back
        P[s, RIGHT, s] += p_stay
        P[s, RIGHT, min(s + 1, S - 1)] += p_fwd
    R = np.zeros((S, 2))
    R[0, LEFT] = small
    R[S - 1, RIGHT] = large
    return P, R


class FiniteMDPEnv(gym.Env):
    """A finite MDP from a kernel ``P`` (``(S, A, S)``) and expected rewards ``R`` (``(S, A)``).

    Observations and actions are ``Discrete``; the reward of a step is ``R[s, a]``. The episode never
    terminates by itself: wrap it in a ``TimeLimit`` (``max_episode_steps``) for episodes.

    Args:
        P: transition kernel, rows distributions.
        R: expected rewards.
        initial: initial-state distribution ``(S,)``; default: state 0.
    """

    metadata = {"render_modes": []}

    def __init__(self, P, R, initial=None):
        self.P = check_kernel(P)
        if self.P.ndim != 3:
            raise ValueError(f"P must have shape (S, A, S), got {self.P.shape}")
        S, A = self.P.shape[:2]
        self.R = check_rewards(R, S, A, "R")
        if initial is None:
            initial = np.eye(S)[0]
        self.initial = np.asarray(initial, dtype=float)
        if self.initial.shape != (S,) or np.any(self.initial < 0) or abs(self.initial.sum() - 1) > 1e-8:
            raise ValueError(f"initial must be a distribution over the {S} states")
        self.observation_space = spaces.Discrete(S)
        self.action_space = spaces.Discrete(A)
        self._cum = np.cumsum(self.P, axis=-1)
        self._state = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._state = int(self.np_random.choice(len(self.initial), p=self.initial))
        return np.int64(self._state), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action must be in {self.action_space}, got {action!r}")
        s, a = self._state, int(action)
        nxt = int(np.searchsorted(self._cum[s, a], self.np_random.random(), side="right"))
        self._state = min(nxt, self.P.shape[0] - 1)
        return np.int64(self._state), float(self.R[s, a]), False, False, {}


class RiverSwimEnv(FiniteMDPEnv):
    """RiverSwim (see the module docstring for the variants). Starts in cell 0 unless ``initial`` is given."""

    def __init__(self, n_states: int = 6, variant: str = "table-rl", small_reward: float | None = None,
                 large_reward: float | None = None, swim_probs=None, current: bool = True, initial=None):
        P, R = riverswim(n_states, variant=variant, small_reward=small_reward, large_reward=large_reward,
                         swim_probs=swim_probs, current=current)
        super().__init__(P, R, initial)


def _register() -> None:
    for env_id, entry in (("cmcboot/RiverSwim-v0", "cmcboot.envs:RiverSwimEnv"),
                          ("cmcboot/FiniteMDP-v0", "cmcboot.envs:FiniteMDPEnv")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry)


_register()
