"""Behaviour policies (stationary, time-switching, reward-switching) and data sets from a known MDP.

A behaviour is vectorised over ``L`` parallel chains: ``start(L)`` gives its memory,
``act(states, t, memory, u)`` turns uniforms ``u`` into actions, ``update(...)`` updates the memory
after a step. The history-dependent one (:class:`RewardSwitchingBehaviour`) is exactly the kind
of control the paper allows: its action law depends on the last reward collected, not on the
current state alone.
"""

from __future__ import annotations

import numpy as np

from cmcboot.envs import LEFT, RIGHT
from cmcboot.mdp import check_kernel


def _sample_rows(cum_rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index of the first entry of each cumulative row that exceeds ``u`` (inverse-CDF sampling)."""
    j = (cum_rows <= u[:, None]).sum(-1)
    return np.minimum(j, cum_rows.shape[-1] - 1)


def _cum(table: np.ndarray) -> np.ndarray:
    c = np.cumsum(table, axis=-1)
    return c / c[..., -1:]


class StationaryBehaviour:
    """Markov stationary behaviour ``π_b(a|s)`` given by an ``(S, A)`` table."""

    def __init__(self, table):
        self.table = np.asarray(table, dtype=float)
        self._cum = _cum(self.table)

    def start(self, n: int):
        return None

    def act(self, s, t, memory, u):
        return _sample_rows(self._cum[s], u)

    def update(self, memory, s, a, s_next, t):
        return memory


class TimeSwitchingBehaviour:
    """Non-stationary: ``first`` before step ``t_switch`` of each chain/episode, ``second`` from then on."""

    def __init__(self, first, second, t_switch: int):
        self.tables = np.stack([np.asarray(first, float), np.asarray(second, float)])
        self._cum = _cum(self.tables)
        self.t_switch = int(t_switch)

    def start(self, n: int):
        return None

    def act(self, s, t, memory, u):
        return _sample_rows(self._cum[int(t >= self.t_switch), s], u)

    def update(self, memory, s, a, s_next, t):
        return memory


class RewardSwitchingBehaviour:
    """History-dependent: the action law is chosen by the last rewarded ``(s, a)`` the chain took.

    ``switch[s, a] = m`` switches the chain to mode ``m`` (0 → ``first``, 1 → ``second``) after it
    takes ``a`` in ``s``; ``-1`` leaves the mode unchanged. Every chain starts in mode 0.
    """

    def __init__(self, first, second, switch):
        self.tables = np.stack([np.asarray(first, float), np.asarray(second, float)])
        self._cum = _cum(self.tables)
        self.switch = np.asarray(switch, dtype=np.int64)

    def start(self, n: int):
        return np.zeros(n, dtype=np.int64)

    def act(self, s, t, memory, u):
        return _sample_rows(self._cum[memory, s], u)

    def update(self, memory, s, a, s_next, t):
        m = self.switch[s, a]
        return np.where(m >= 0, m, memory)


def riverswim_behaviours(n_states: int, bias: float = 0.7) -> dict:
    """The three behaviours of the experiments on RiverSwim.

    - ``mostly_left``: left with probability ``bias`` in every state;
    - ``mostly_right``: right with probability ``bias``;
    - ``history``: mostly right until it collects the large reward (right in the last cell), then
      mostly left until it collects the small reward (left in cell 0), and so on.
    """
    if not 0.0 < bias < 1.0:
        raise ValueError(f"bias must be in (0, 1), got {bias}")
    left = np.tile([bias, 1 - bias], (n_states, 1))
    right = left[:, ::-1].copy()
    switch = -np.ones((n_states, 2), dtype=np.int64)
    switch[n_states - 1, RIGHT] = 1
    switch[0, LEFT] = 0
    return {"mostly_left": StationaryBehaviour(left), "mostly_right": StationaryBehaviour(right),
            "history": RewardSwitchingBehaviour(right, left, switch)}


def simulate_datasets(P, behaviour, *, n_datasets: int, n_episodes: int, length: int, initial,
                      rng: np.random.Generator) -> np.ndarray:
    """``n_datasets`` data sets of ``n_episodes`` trajectories of ``length`` steps from the true ``P``.

    Returns an int array ``(D, K, T, 3)`` of rows ``(state, action, next_state)``; ``initial`` is the
    initial-state distribution ``(S,)`` of every chain/episode. All ``D·K`` trajectories are simulated
    in parallel.
    """
    P = check_kernel(P)
    S = P.shape[0]
    if min(n_datasets, n_episodes, length) < 1:
        raise ValueError("n_datasets, n_episodes and length must be >= 1")
    L = n_datasets * n_episodes
    cumP = _cum(P)
    s = rng.choice(S, size=L, p=np.asarray(initial, float))
    memory = behaviour.start(L)
    out = np.empty((length, L, 3), dtype=np.int64)
    for t in range(length):
        u = rng.random((2, L))
        a = behaviour.act(s, t, memory, u[0])
        s_next = _sample_rows(cumP[s, a], u[1])
        out[t, :, 0], out[t, :, 1], out[t, :, 2] = s, a, s_next
        memory = behaviour.update(memory, s, a, s_next, t)
        s = s_next
    return out.reshape(length, n_datasets, n_episodes, 3).transpose(1, 2, 0, 3)


def rollout(env, policy, n_steps: int, *, seed: int | None = None) -> np.ndarray:
    """Roll a gymnasium env with a discrete observation space for ``n_steps`` steps.

    ``policy`` is an ``(S, A)`` table or a callable ``(obs, rng) -> action``. Returns a float array of
    rows ``(state, action, next_state, reward)``: the trajectory format of :class:`cmcboot.ModelBootstrap`.
    An episode that terminates or truncates ends the trajectory early.
    """
    rng = np.random.default_rng(seed)
    if not callable(policy):
        cdf = _cum(np.asarray(policy, dtype=float))

        def policy(obs, rng):
            return int(np.searchsorted(cdf[int(obs)], rng.random(), side="right"))

    obs, _ = env.reset(seed=seed)
    rows = []
    for _ in range(int(n_steps)):
        a = policy(obs, rng)
        nxt, r, terminated, truncated, _ = env.step(a)
        rows.append((int(obs), int(a), int(nxt), float(r)))
        if terminated or truncated:
            break
        obs = nxt
    return np.array(rows, dtype=float).reshape(-1, 4)
