"""Interaction graphs for the consensus game.

Two kinds:

- ``static``: a fixed undirected graph stored as a symmetric edge list (``senders``,
  ``receivers``), e.g. a Barabási–Albert "social media" graph, the small real social graphs that
  ship with networkx, or a user's edge list.
- ``groups``: ``n_nodes`` agents split into groups of ``group_size`` that are re-drawn uniformly
  at random every round ("hunter-gatherer" bands); everyone in a group is a neighbour.

Neighbour aggregation costs O(edges) (``jax.ops.segment_sum``) for static graphs and O(N) for
groups, so the game scales to thousands of agents under ``jit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from paperworks import check_int


@dataclass(frozen=True, eq=False)
class Graph:
    """An interaction structure. Build one with the functions of this module.

    Attributes:
        n_nodes: number of agents N.
        senders, receivers: int32 arrays of shape ``(2·|E|,)``, both directions of every edge
            (``static`` only; empty for ``groups``).
        kind: ``"static"`` or ``"groups"``.
        group_size: agents per group (``groups`` only).
        name: a label for logs and tables.
    """

    n_nodes: int
    senders: np.ndarray
    receivers: np.ndarray
    kind: str = "static"
    group_size: int = 0
    name: str = "graph"

    @property
    def n_edges(self) -> int:
        """Undirected edges (for ``groups``: the edges of one round's groups)."""
        if self.kind == "groups":
            sizes = np.bincount(np.arange(self.n_nodes) // self.group_size)
            return int(np.sum(sizes * (sizes - 1) // 2))
        return int(self.senders.shape[0] // 2)

    @property
    def n_groups(self) -> int:
        return -(-self.n_nodes // self.group_size) if self.kind == "groups" else 0

    def degree(self) -> np.ndarray:
        """Degree of every node, shape ``(N,)`` (for ``groups``: group size − 1)."""
        if self.kind == "groups":
            # group membership is re-drawn each round, the sizes are not: node i of a draw sits
            # in a group of the size that slot i has
            sizes = np.bincount(np.arange(self.n_nodes) // self.group_size)
            return sizes[np.arange(self.n_nodes) // self.group_size] - 1
        return np.bincount(self.receivers, minlength=self.n_nodes)

    def to_networkx(self) -> nx.Graph:
        if self.kind == "groups":
            raise ValueError("a 'groups' graph changes every round; it has no single networkx graph")
        g = nx.Graph()
        g.add_nodes_from(range(self.n_nodes))
        g.add_edges_from(zip(self.senders.tolist(), self.receivers.tolist()))
        return g


def _check_int(name: str, value, low: int) -> int:
    return check_int(value, name, minimum=low)


def from_edge_list(edges, n_nodes: int | None = None, *, name: str = "edge_list") -> Graph:
    """A static graph from an ``(E, 2)`` array of node ids in ``[0, n_nodes)``.

    Self-loops and duplicate edges are dropped; direction is ignored; nodes without edges are
    kept (isolated agents see no neighbours and get no agreement reward).
    """
    e = np.asarray(edges)
    if e.size == 0:
        e = e.reshape(0, 2)
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"edges must have shape (E, 2), got {e.shape}")
    if e.size and not np.issubdtype(e.dtype, np.integer):
        if not np.all(np.mod(e, 1) == 0):
            raise TypeError("edges must hold integer node ids")
        e = e.astype(np.int64)
    if n_nodes is None:
        n_nodes = int(e.max()) + 1 if e.size else 0
    n_nodes = _check_int("n_nodes", n_nodes, 1)
    if e.size and (e.min() < 0 or e.max() >= n_nodes):
        raise ValueError(f"edges hold node ids outside [0, {n_nodes}): min {e.min()}, max {e.max()}")
    e = e[e[:, 0] != e[:, 1]]
    e = np.unique(np.sort(e, axis=1), axis=0) if e.size else e.reshape(0, 2)
    senders = np.concatenate([e[:, 0], e[:, 1]]).astype(np.int32)
    receivers = np.concatenate([e[:, 1], e[:, 0]]).astype(np.int32)
    return Graph(n_nodes, senders, receivers, "static", 0, name)


def from_networkx(g: nx.Graph, *, name: str | None = None) -> Graph:
    """A static graph from any networkx graph (nodes relabelled 0..N−1 in iteration order)."""
    if not isinstance(g, nx.Graph):
        raise TypeError(f"g must be a networkx graph, got {type(g).__name__}")
    idx = {v: i for i, v in enumerate(g.nodes())}
    edges = np.array([(idx[u], idx[v]) for u, v in g.edges()], dtype=np.int64).reshape(-1, 2)
    return from_edge_list(edges, len(idx), name=name or g.name or "networkx")


def _fields(path, comments: str):
    """The whitespace- or comma-separated fields of every non-empty, non-comment line of a text file."""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split(comments, 1)[0].strip()
        if line:
            yield line.replace(",", " ").split()


def load_edge_list(path, n_nodes: int | None = None, *, comments: str = "#") -> tuple[Graph, int]:
    """Read a whitespace- or comma-separated ``u v`` file of integer ids.

    Bad rows (not two integers) are skipped and counted. Returns ``(graph, n_skipped)``.
    """
    rows, skipped = [], 0
    for parts in _fields(path, comments):
        try:
            if len(parts) < 2:
                raise ValueError
            rows.append((int(parts[0]), int(parts[1])))
        except ValueError:
            skipped += 1
    return from_edge_list(np.array(rows, dtype=np.int64).reshape(-1, 2), n_nodes, name=Path(path).stem), skipped


def load_engagement(path, n_nodes: int, *, comments: str = "#") -> tuple[np.ndarray, int]:
    """Read a per-node engagement file for a real graph: ``node value`` rows (whitespace or comma
    separated; node ids as in the edge list, ``0 … n_nodes−1``), e.g. followers or reposts per account.

    Rows that are not an integer id and a number (a header, say) are skipped and counted. Every node
    must appear exactly once with a finite value. Returns ``(engagement (N,), n_skipped)``.
    """
    n_nodes = _check_int("n_nodes", n_nodes, 1)
    values = np.full(n_nodes, np.nan)
    skipped = 0
    for parts in _fields(path, comments):
        try:
            if len(parts) < 2:
                raise ValueError
            node, value = int(parts[0]), float(parts[1])
        except ValueError:
            skipped += 1
            continue
        if not 0 <= node < n_nodes:
            raise ValueError(f"{path}: node id {node} outside [0, {n_nodes})")
        if not np.isnan(values[node]):
            raise ValueError(f"{path}: node {node} appears twice")
        if not np.isfinite(value):
            raise ValueError(f"{path}: node {node} has a non-finite engagement {parts[1]!r}")
        values[node] = value
    missing = np.flatnonzero(np.isnan(values))
    if missing.size:
        raise ValueError(f"{path}: {missing.size} of {n_nodes} nodes have no engagement value "
                         f"(first: {missing[:5].tolist()})")
    return values, skipped


def barabasi_albert(n_nodes: int, m: int = 3, *, seed: int = 0) -> Graph:
    """The "social media" graph: Barabási–Albert preferential attachment (networkx)."""
    n_nodes = _check_int("n_nodes", n_nodes, 2)
    m = _check_int("m", m, 1)
    if m >= n_nodes:
        raise ValueError(f"m must be < n_nodes, got m={m}, n_nodes={n_nodes}")
    return from_networkx(nx.barabasi_albert_graph(n_nodes, m, seed=seed), name=f"ba{n_nodes}_m{m}")


def dynamic_groups(n_nodes: int, group_size: int = 5) -> Graph:
    """The "hunter-gatherer" structure: groups of ``group_size`` re-drawn every round."""
    n_nodes = _check_int("n_nodes", n_nodes, 1)
    group_size = _check_int("group_size", group_size, 1)
    empty = np.zeros(0, dtype=np.int32)
    return Graph(n_nodes, empty, empty, "groups", group_size, f"groups{n_nodes}_g{group_size}")


_REAL = {
    "karate": nx.karate_club_graph,
    "les_miserables": nx.les_miserables_graph,
    "florentine": nx.florentine_families_graph,
    "davis": nx.davis_southern_women_graph,
}


def real_graph(name: str) -> Graph:
    """One of the small social graphs that ship with networkx (no download).

    ``karate`` (34 nodes), ``les_miserables`` (77), ``florentine`` (15), ``davis`` (32).
    """
    if name not in _REAL:
        raise ValueError(f"name must be one of {sorted(_REAL)}, got {name!r}")
    return from_networkx(_REAL[name](), name=name)


def make_graph(kind: str, **kw) -> Graph:
    """Config entry point: ``ba`` (n_nodes, m, seed), ``groups`` (n_nodes, group_size), a real name, or ``edge_list`` (path)."""
    if kind == "ba":
        return barabasi_albert(int(kw["n_nodes"]), int(kw.get("m", 3)), seed=int(kw.get("seed", 0)))
    if kind == "groups":
        return dynamic_groups(int(kw["n_nodes"]), int(kw.get("group_size", 5)))
    if kind == "edge_list":
        return load_edge_list(kw["path"], kw.get("n_nodes"))[0]
    if kind in _REAL:
        return real_graph(kind)
    raise ValueError(f"graph kind must be 'ba', 'groups', 'edge_list' or one of {sorted(_REAL)}, got {kind!r}")


def topology_features(graph: Graph) -> np.ndarray:
    """Per-node topology features, shape ``(N, 4)``, each standardised.

    log(1+degree), PageRank, clustering coefficient, k-core number.
    """
    if graph.kind != "static":
        raise ValueError("topology features need a static graph")
    g = graph.to_networkx()
    deg = np.log1p(graph.degree().astype(float))
    pr = nx.pagerank(g) if graph.n_edges else {i: 1.0 / graph.n_nodes for i in range(graph.n_nodes)}
    cl = nx.clustering(g)
    core = nx.core_number(g)
    f = np.stack([deg, [pr[i] for i in range(graph.n_nodes)], [cl[i] for i in range(graph.n_nodes)],
                  [core[i] for i in range(graph.n_nodes)]], axis=1).astype(float)
    sd = f.std(axis=0)
    return (f - f.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
