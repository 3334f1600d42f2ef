"""The consensus and truth-finding game, vectorised in pure JAX.

Our own design from the abstract of Seier et al. (2026), arXiv 2606.07487; the paper's exact
rules are not public. Rules:

1. A hidden truth ``T`` is drawn uniformly from ``K`` options.
2. Agent ``i`` gets a private signal ``s_i``: equal to ``T`` with probability ``q_i``
   (``signal_accuracy``, a scalar or one value per agent), otherwise uniform over the other
   ``K − 1`` options.
3. For ``R`` rounds every agent publicly declares an option ``d_i,t``. Its neighbours (in the
   round's graph) see it.
4. Reward of agent ``i`` in round ``t`` (``c`` = ``conformity``)::

       r_i,t = (1 − c) · 1[d_i,t = T] + c · |{j ∈ N_t(i) : d_j,t = d_i,t}| / |N_t(i)|

   with the agreement term 0 for an agent without neighbours.
5. Observation after round ``t`` (a vector of ``3K + 2`` numbers, independent of ``N``):
   one-hot own signal, one-hot own last declaration (zeros before round 1), the normalised
   histogram of the neighbours' round-``t`` declarations, ``t / R`` and
   ``log(1 + degree) / log(1 + N)``.

The API follows JaxMARL (``reset(key) -> (obs, state)``,
``step(key, state, actions) -> (obs, state, rewards, dones, info)``) with arrays indexed by agent
instead of per-agent dicts, and gymnax-style optional ``params`` so that the conformity and the
signal accuracy can be traced (``vmap`` over a conformity sweep compiles once). ``step`` does not
auto-reset: an episode is exactly ``R`` steps (``lax.scan`` over rounds).

Example:
    >>> env = ConsensusGame(barabasi_albert(50), conformity=0.5)
    >>> obs, state = env.reset(jax.random.key(0))
    >>> obs, state, r, done, info = env.step(jax.random.key(1), state, state.signals)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from consensusgame.graphs import Graph
from paperworks import check_int


@struct.dataclass
class EnvParams:
    """Traceable game parameters.

    ``conformity`` (scalar) and ``signal_accuracy`` (scalar or ``(N,)``); for a static graph also the
    graph itself: ``senders``/``receivers`` (both directions of every edge, padded to the game's
    ``edge_capacity`` with receiver ``N``, which the neighbour sums drop) and ``degree`` ``(N,)``.
    With the graph in the parameters, a compiled training or evaluation serves every graph with the
    same number of nodes and at most ``edge_capacity`` directed edges (:meth:`ConsensusGame.make_params`).
    The graph fields may be left ``None``; the game then fills in its own graph
    (:meth:`ConsensusGame.complete_params`).
    """

    conformity: jax.Array
    signal_accuracy: jax.Array
    senders: jax.Array | None = None
    receivers: jax.Array | None = None
    degree: jax.Array | None = None


@struct.dataclass
class EnvState:
    """``truth`` (), ``signals`` (N,), ``last_decl`` (N,; −1 before round 1), ``groups`` (N,),
    ``counts`` (N, K) neighbour declaration counts of the last round, ``round`` ()."""

    truth: jax.Array
    signals: jax.Array
    last_decl: jax.Array
    groups: jax.Array
    counts: jax.Array
    round: jax.Array


def _check_unit(name: str, value) -> None:
    if isinstance(value, (str, bytes, bool)) or (hasattr(value, "dtype") and not np.issubdtype(
            np.asarray(value).dtype, np.number)):
        raise TypeError(f"{name} must be a number (or an array of numbers), got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number (or an array of numbers), got {type(value).__name__}") from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")


def _accuracy(signal_accuracy, n: int) -> np.ndarray:
    """Checked signal accuracy: a scalar or ``(n,)`` values in [0, 1], as float32."""
    _check_unit("signal_accuracy", signal_accuracy)
    q = np.asarray(signal_accuracy, dtype=np.float32)
    if q.ndim not in (0, 1) or (q.ndim == 1 and q.shape[0] != n):
        raise ValueError(f"signal_accuracy must be a scalar or have shape ({n},), got {q.shape}")
    return q


def as_graph(graph) -> Graph:
    """A :class:`Graph` from a ``Graph``, a networkx graph or an ``(E, 2)`` integer edge array."""
    import networkx as nx

    from consensusgame.graphs import from_edge_list, from_networkx

    if isinstance(graph, Graph):
        return graph
    if isinstance(graph, nx.Graph):
        return from_networkx(graph)
    if isinstance(graph, (np.ndarray, jax.Array)) or (isinstance(graph, (list, tuple)) and graph
                                                      and all(isinstance(e, (list, tuple, np.ndarray)) for e in graph)):
        return from_edge_list(np.asarray(graph))
    raise TypeError("graph must be a consensusgame.graphs.Graph, a networkx graph or an (E, 2) edge array, "
                    f"got {type(graph).__name__}")


class StructureKey:
    """A ``jit`` static argument standing for a game: equal (and hashed) by :attr:`ConsensusGame.structure`,
    so games of one structure share compiled code. Use it only where the graph and the conformity
    arrive as traced :class:`EnvParams` (completed with :meth:`ConsensusGame.complete_params`)."""

    __slots__ = ("game",)

    def __init__(self, game: ConsensusGame):
        self.game = game

    def __hash__(self) -> int:
        return hash(self.game.structure)

    def __eq__(self, other) -> bool:
        return isinstance(other, StructureKey) and other.game.structure == self.game.structure


class ConsensusGame:
    """A truth-finding game with conformity reward on a graph (see the module docstring).

    Args:
        graph: a :class:`~consensusgame.graphs.Graph` (static or re-drawn groups), a networkx graph,
            or an ``(E, 2)`` array of integer node ids (an edge list; ``N`` = largest id + 1).
        n_options: ``K >= 2`` options.
        signal_accuracy: ``q`` in [0, 1], a scalar or an array of shape ``(N,)``.
        conformity: ``c`` in [0, 1].
        rounds: ``R >= 1`` declaration rounds per episode.
        edge_capacity: directed edges (``2·|E|``) the graph parameters are padded to (default: this
            graph's own). Games with the same ``N``, ``K``, ``R``, kind and capacity share compiled
            training and evaluation (:attr:`structure`): a new graph of the same size, or a new
            conformity, does not recompile.
    """

    def __init__(self, graph: Graph, n_options: int = 2, signal_accuracy=0.65, conformity: float = 0.5,
                 rounds: int = 5, *, edge_capacity: int | None = None):
        graph = as_graph(graph)
        for name, v in (("n_options", n_options), ("rounds", rounds)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
        if n_options < 2:
            raise ValueError(f"n_options must be >= 2, got {n_options}")
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        q = _accuracy(signal_accuracy, graph.n_nodes)
        _check_unit("conformity", conformity)
        self.graph = graph
        self.num_agents = graph.n_nodes
        self.n_options = int(n_options)
        self.rounds = int(rounds)
        self.obs_dim = 3 * self.n_options + 2
        n_dir = int(graph.senders.shape[0])
        if edge_capacity is None:
            edge_capacity = n_dir
        edge_capacity = check_int(edge_capacity, "edge_capacity", minimum=0)
        if edge_capacity < n_dir:
            raise ValueError(f"edge_capacity ({edge_capacity}) is below the graph's {n_dir} directed edges")
        self.edge_capacity = edge_capacity
        self._senders, self._receivers, self._static_degree = self._graph_arrays(graph)
        self._log_norm = math.log1p(graph.n_nodes)
        self.default_params = EnvParams(jnp.float32(conformity), jnp.asarray(q), self._senders, self._receivers,
                                        self._static_degree)

    # parameters -------------------------------------------------------------------------

    @property
    def structure(self) -> tuple:
        """What compiled code depends on: ``(N, K, R, kind, group_size, edge_capacity)``."""
        return (self.num_agents, self.n_options, self.rounds, self.graph.kind, self.graph.group_size,
                self.edge_capacity)

    def _graph_arrays(self, graph: Graph):
        """Padded ``senders``, ``receivers`` (pad: receiver N, dropped) and ``degree`` of a static graph."""
        n, cap = self.num_agents, self.edge_capacity
        pad = cap - int(graph.senders.shape[0])
        senders = np.concatenate([np.asarray(graph.senders, np.int32), np.zeros(pad, np.int32)])
        receivers = np.concatenate([np.asarray(graph.receivers, np.int32), np.full(pad, n, np.int32)])
        return jnp.asarray(senders), jnp.asarray(receivers), jnp.asarray(graph.degree(), dtype=jnp.float32)

    def make_params(self, *, graph=None, conformity=None, signal_accuracy=None) -> EnvParams:
        """Game parameters for this game's compiled code with another ``graph`` (same ``N`` and kind,
        at most ``edge_capacity`` directed edges), ``conformity`` or ``signal_accuracy``; what is not
        given is this game's own."""
        p = self.default_params
        if conformity is not None:
            _check_unit("conformity", conformity)
            p = p.replace(conformity=jnp.float32(conformity))
        if signal_accuracy is not None:
            p = p.replace(signal_accuracy=jnp.asarray(_accuracy(signal_accuracy, self.num_agents)))
        if graph is not None:
            graph = as_graph(graph)
            if graph.n_nodes != self.num_agents or graph.kind != self.graph.kind:
                raise ValueError(f"graph must have {self.num_agents} nodes and kind {self.graph.kind!r} like this "
                                 f"game's, got {graph.n_nodes} nodes of kind {graph.kind!r}")
            if graph.kind == "groups":
                if graph.group_size != self.graph.group_size:
                    raise ValueError(f"group_size must be {self.graph.group_size}, got {graph.group_size}")
            elif graph.senders.shape[0] > self.edge_capacity:
                raise ValueError(f"the graph has {graph.senders.shape[0]} directed edges, more than this game's "
                                 f"edge_capacity {self.edge_capacity}; make the game with a larger edge_capacity")
            s, r, d = self._graph_arrays(graph)
            p = p.replace(senders=s, receivers=r, degree=d)
        return p

    def complete_params(self, params: EnvParams | None) -> EnvParams:
        """``params`` with the graph fields this game's own where they are ``None`` (``None``: the defaults)."""
        if params is None:
            return self.default_params
        if params.senders is None or params.receivers is None or params.degree is None:
            params = params.replace(senders=self._senders if params.senders is None else params.senders,
                                    receivers=self._receivers if params.receivers is None else params.receivers,
                                    degree=self._static_degree if params.degree is None else params.degree)
        return params

    # neighbourhoods -------------------------------------------------------------------

    def _draw_groups(self, key) -> jax.Array:
        n = self.num_agents
        if self.graph.kind != "groups":
            return jnp.zeros(n, dtype=jnp.int32)
        slot_group = jnp.arange(n, dtype=jnp.int32) // self.graph.group_size
        return jnp.zeros(n, dtype=jnp.int32).at[jax.random.permutation(key, n)].set(slot_group)

    def neighbour_sum(self, x: jax.Array, groups: jax.Array, params: EnvParams | None = None) -> jax.Array:
        """``Σ_{j ∈ N(i)} x_j`` for every agent, ``x`` of shape ``(N, ...)``; O(edges). The edges are
        ``params``' when it carries a graph, else this game's."""
        if self.graph.kind == "groups":
            tot = jax.ops.segment_sum(x, groups, num_segments=self.graph.n_groups)
            return tot[groups] - x
        p = self.complete_params(params)
        # padded edges have receiver N: segment_sum drops ids outside [0, N)
        return jax.ops.segment_sum(x[p.senders], p.receivers, num_segments=self.num_agents)

    def degree(self, groups: jax.Array, params: EnvParams | None = None) -> jax.Array:
        if self.graph.kind == "groups":
            return self.neighbour_sum(jnp.ones(self.num_agents, jnp.float32), groups)
        return self.complete_params(params).degree

    # API ------------------------------------------------------------------------------

    def _obs(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        k = self.n_options
        deg = self.degree(state.groups, params)
        own = jax.nn.one_hot(state.signals, k)
        last = jax.nn.one_hot(state.last_decl, k)  # −1 gives zeros
        hist = state.counts / jnp.maximum(state.counts.sum(-1, keepdims=True), 1.0)
        t = jnp.full((self.num_agents, 1), state.round / self.rounds, dtype=jnp.float32)
        ld = (jnp.log1p(deg) / self._log_norm)[:, None]
        return jnp.concatenate([own, last, hist, t, ld], axis=-1)

    def reset(self, key, params: EnvParams | None = None):
        """Draw truth, signals and the first groups. Returns ``(obs (N, 3K+2), state)``."""
        params = self.default_params if params is None else params
        n, k = self.num_agents, self.n_options
        kt, kc, kw, kg = jax.random.split(key, 4)
        truth = jax.random.randint(kt, (), 0, k)
        correct = jax.random.uniform(kc, (n,)) < params.signal_accuracy
        wrong = (truth + jax.random.randint(kw, (n,), 1, k)) % k
        signals = jnp.where(correct, truth, wrong).astype(jnp.int32)
        state = EnvState(truth.astype(jnp.int32), signals, jnp.full((n,), -1, jnp.int32), self._draw_groups(kg),
                         jnp.zeros((n, k), jnp.float32), jnp.int32(0))
        return self._obs(state, params), state

    def step(self, key, state: EnvState, actions, params: EnvParams | None = None):
        """Everyone declares ``actions`` (N,) ints in [0, K).

        Returns ``(obs, state, rewards (N,), dones (N,), info)``; ``info`` holds ``correct``,
        ``agreement`` (fraction of neighbours agreeing), ``degree``, ``all_done`` and ``invalid_action``.
        Actions outside ``[0, K)`` raise ``ValueError`` when called eagerly; under ``jit`` they are
        flagged in ``info["invalid_action"]`` and get a NaN reward (so training on them cannot pass silently).
        """
        params = self.default_params if params is None else params
        k = self.n_options
        if not isinstance(actions, jax.core.Tracer):               # eager: refuse bad actions outright
            a = np.asarray(actions)
            if a.shape != (self.num_agents,) or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
                raise ValueError(f"actions must be {self.num_agents} integers in [0, {k}), got shape {a.shape} "
                                 f"dtype {a.dtype}")
            if a.size and (a.min() < 0 or a.max() >= k):
                raise ValueError(f"actions must lie in [0, {k}), got min {a.min()}, max {a.max()}")
        actions = jnp.asarray(actions, dtype=jnp.int32)
        invalid = (actions < 0) | (actions >= k)                     # traced: flagged, and the reward is NaN
        onehot = jax.nn.one_hot(actions, k)
        counts = self.neighbour_sum(onehot, state.groups, params)
        deg = counts.sum(-1)
        agree = jnp.where(deg > 0, jnp.take_along_axis(counts, actions[:, None], 1)[:, 0] / jnp.maximum(deg, 1.0), 0.0)
        correct = (actions == state.truth).astype(jnp.float32)
        c = params.conformity
        rewards = jnp.where(invalid, jnp.nan, (1.0 - c) * correct + c * agree)
        new_round = state.round + 1
        new_groups = self._draw_groups(key) if self.graph.kind == "groups" else state.groups
        # the observation shows the round just played; degree feature refers to the next round
        nxt = state.replace(last_decl=actions, counts=counts, round=new_round, groups=new_groups)
        done = new_round >= self.rounds
        dones = jnp.full((self.num_agents,), done)
        info = {"correct": correct, "agreement": agree, "degree": deg, "all_done": done, "invalid_action": invalid}
        return self._obs(nxt, params), nxt, rewards, dones, info
