"""Behaviour policies (stationary, time-switching, reward-switching) and data sets from a known MDP.

A behaviour is vectorised over ``L`` parallel chains: ``start(L)`` gives its memory,
``act(states, t, memory, u)`` turns uniforms ``u`` into actions, ``update(...)`` updates the memory
after a step. The history-dependent one (:class:`RewardSwitchingBehaviour`) is exactly the kind
of control the paper allows: its action law depends on the last reward collected, not on the
current state alone.
"""

from __future__ import annotations

import csv
import logging
import numbers
from pathlib import Path

import numpy as np

from cmcboot.envs import LEFT, RIGHT
from cmcboot.mdp import check_kernel

log = logging.getLogger(__name__)
COLUMNS = {"state": "state", "action": "action", "next_state": "next_state", "reward": "reward", "episode": "episode"}


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
    if P.ndim != 3:
        raise ValueError(f"P must have shape (S, A, S), got {P.shape}")
    S = P.shape[0]
    for name, v in (("n_datasets", n_datasets), ("n_episodes", n_episodes), ("length", length)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be a positive integer, got {v!r} ({type(v).__name__})")
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    init = np.asarray(initial)
    if init.dtype.kind not in "iuf" or init.shape != (S,):
        raise ValueError(f"initial must be a distribution over the {S} states, shape ({S},), "
                         f"got shape {init.shape} and dtype {init.dtype}")
    init = init.astype(float)
    if not np.all(np.isfinite(init)) or np.any(init < 0) or abs(init.sum() - 1.0) > 1e-8:
        raise ValueError(f"initial must be finite, non-negative and sum to 1, got {init.tolist()}")
    L = n_datasets * n_episodes
    cumP = _cum(P)
    s = rng.choice(S, size=L, p=init)
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


# users' data -------------------------------------------------------------------------------------

def _integer_column(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one entry per transition), got shape {arr.shape}")
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integers (any integer or float dtype), got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{i}] = {arr[i].item()!r} is not an integer")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        i = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name}[{i}] = {arr[i]} is negative (states and actions are 0, 1, ...)")
    return arr


def from_arrays(states, actions, next_states, rewards=None, episodes=None, *, n_states: int | None = None,
                n_actions: int | None = None) -> list[np.ndarray]:
    """Trajectories in the format of :class:`cmcboot.ModelBootstrap` from column arrays.

    Args:
        states, actions, next_states: ``(N,)`` integers (any integer dtype, or floats holding
            integers: numpy arrays, lists, torch tensors on the CPU).
        rewards: optional ``(N,)`` finite rewards.
        episodes: optional ``(N,)`` episode ids; a trajectory is each run of equal consecutive ids
            (default: one trajectory).
        n_states, n_actions: sizes of the spaces; values must lie below them.

    Returns:
        a list of ``(T_k, 3)`` int arrays (``(T_k, 4)`` float arrays with rewards), one per
        trajectory, each a path (``next_state[t] == state[t+1]``; a break raises, naming the row).

    Example:
        >>> traj = from_arrays([0, 1, 1], [1, 1, 0], [1, 1, 0], n_states=2, n_actions=2)
        >>> [t.tolist() for t in traj]
        [[[0, 1, 1], [1, 1, 1], [1, 0, 0]]]
    """
    from cmcboot.bootstrap import check_size

    S, A = check_size(n_states, "n_states"), check_size(n_actions, "n_actions")
    s, a, s2 = (_integer_column(x, n) for x, n in ((states, "states"), (actions, "actions"),
                                                     (next_states, "next_states")))
    if not (s.size == a.size == s2.size) or s.size == 0:
        raise ValueError(f"states, actions and next_states must be non-empty and of one length, "
                         f"got {s.size}, {a.size}, {s2.size}")
    for arr, name, size, what in ((s, "states", S, "n_states"), (s2, "next_states", S, "n_states"),
                                  (a, "actions", A, "n_actions")):
        if size is not None and arr.max() >= size:
            i = int(np.flatnonzero(arr >= size)[0])
            raise ValueError(f"{name}[{i}] = {arr[i]} is out of range: {what}={size}")
    cols = [s, a, s2]
    if rewards is not None:
        r = np.asarray(rewards)
        if r.dtype == bool or r.dtype.kind not in "iuf" or r.shape != s.shape:
            raise ValueError(f"rewards must be {s.size} numbers, got shape {r.shape} and dtype {r.dtype}")
        r = r.astype(float)
        if not np.all(np.isfinite(r)):
            raise ValueError(f"rewards[{int(np.flatnonzero(~np.isfinite(r))[0])}] is not finite")
        cols.append(r)
    table = np.column_stack(cols) if rewards is not None else np.column_stack(cols).astype(np.int64)
    if episodes is None:
        cuts = np.array([], dtype=np.int64)
    else:
        ep = np.asarray(episodes)
        if ep.shape != s.shape:
            raise ValueError(f"episodes must be {s.size} ids, got shape {ep.shape}")
        cuts = np.flatnonzero(ep[1:] != ep[:-1]) + 1
    out = np.split(table, cuts)
    start = 0
    for k, tr in enumerate(out):
        broken = np.flatnonzero(tr[1:, 0] != tr[:-1, 2])
        if broken.size:
            i = start + int(broken[0])
            raise ValueError(f"trajectory {k} is not a path: next_states[{i}] = {int(tr[broken[0], 2])} but "
                             f"states[{i + 1}] = {int(tr[broken[0] + 1, 0])} (give episode ids where episodes end)")
        start += len(tr)
    return out


def load_trajectories(path, *, columns=None, n_states: int | None = None, n_actions: int | None = None
                      ) -> tuple[list[np.ndarray], dict]:
    """Trajectories from a user's ``.npz`` or ``.csv`` file; returns ``(trajectories, report)``.

    ``columns`` maps the roles ``state``, ``action``, ``next_state`` (required), ``reward`` and
    ``episode`` (optional) to the file's array names (``.npz``) or header names (``.csv``); default:
    the roles' own names. In a CSV, rows whose fields are missing, not numbers, not integers where
    integers belong, negative or out of range are skipped and counted with their line numbers; a
    skipped row ends its trajectory (the next row starts a new one). The ``report`` says how many rows
    were read and skipped (``skipped``: ``[(line, reason), ...]``) and how many trajectories came out.
    """
    path = Path(path)
    names = {**COLUMNS, **(dict(columns) if columns else {})}
    unknown = set(names) - set(COLUMNS)
    if unknown:
        raise ValueError(f"columns: unknown roles {sorted(unknown)}; roles are {sorted(COLUMNS)}")
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".csv"):
        raise ValueError(f"data.path must be a .npz or .csv file, got {path.name!r}")
    if not path.exists():
        raise FileNotFoundError(f"data.path: no such file {str(path)!r}")
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            missing = [names[r] for r in ("state", "action", "next_state") if names[r] not in z.files]
            if missing:
                raise ValueError(f"{path.name}: arrays {missing} not found (has {z.files}); name them with "
                                 "data.columns.<role>=<array>")
            cols = {r: z[names[r]] for r in COLUMNS if names[r] in z.files}
        traj = from_arrays(cols["state"], cols["action"], cols["next_state"], cols.get("reward"), cols.get("episode"),
                           n_states=n_states, n_actions=n_actions)
        return traj, {"rows": int(len(cols["state"])), "skipped": [], "trajectories": len(traj)}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path.name} is empty")
        header = [h.strip() for h in header]
        missing = [names[r] for r in ("state", "action", "next_state") if names[r] not in header]
        if missing:
            raise ValueError(f"{path.name}: columns {missing} not in the header {header}; name them with "
                             "data.columns.<role>=<column>")
        where = {r: header.index(names[r]) for r in COLUMNS if names[r] in header}
        rows, lines, skipped = [], [], []
        limits = {"state": n_states, "next_state": n_states, "action": n_actions}
        for line, rec in enumerate(reader, start=2):
            try:
                vals = {}
                for role, j in where.items():
                    field = rec[j].strip() if j < len(rec) else ""
                    if field == "":
                        raise ValueError(f"{names[role]} is missing")
                    x = float(field)
                    if not np.isfinite(x):
                        raise ValueError(f"{names[role]} is not finite")
                    if role in limits:
                        if x != round(x) or x < 0:
                            raise ValueError(f"{names[role]} = {field} is not a non-negative integer")
                        if limits[role] is not None and x >= limits[role]:
                            raise ValueError(f"{names[role]} = {field} is out of range")
                    vals[role] = x
            except ValueError as e:
                skipped.append((line, str(e).replace("could not convert string to float: ", "not a number: ")))
                continue
            rows.append(vals)
            lines.append(line)
    if skipped:
        log.warning("%s: skipped %d bad row(s), first at line %d (%s)", path.name, len(skipped), *skipped[0])
    if not rows:
        raise ValueError(f"{path.name}: no usable rows ({len(skipped)} skipped)")
    arr = {r: np.array([v[r] for v in rows]) for r in where}
    # a skipped row ends its trajectory: new episode ids after every gap in the line numbers
    gap = np.concatenate([[0], np.cumsum(np.diff(lines) > 1)])
    ep = arr["episode"] if "episode" in arr else np.zeros(len(rows))
    change = np.concatenate([[0], np.cumsum((ep[1:] != ep[:-1]) | (np.diff(gap) > 0))])
    traj = from_arrays(arr["state"], arr["action"], arr["next_state"], arr.get("reward"), change,
                       n_states=n_states, n_actions=n_actions)
    return traj, {"rows": len(rows) + len(skipped), "skipped": skipped, "trajectories": len(traj)}
