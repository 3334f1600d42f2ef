"""Generated data sets (nothing is downloaded).

- :func:`colour_topology_graphs`: Bianchi-style graphs where features and topology are each
  uninformative alone (our own recipe, after FilippoMB/Benchmark_dataset_for_graph_classification);
- :func:`motif_graphs`: BA + house vs BA + cycle graphs from PyG's ``ExplainerDataset`` with
  ground-truth motif node masks;
- :func:`csbm`: a two-class contextual stochastic block model at a given edge homophily;
- :func:`ring_graphs`: a long-range path task (the label sits at the far end from the read-out node);
- :func:`random_graph`: a sparse random graph for the benchmark.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import degree, from_networkx, to_undirected

__all__ = ["colour_topology_graphs", "motif_graphs", "csbm", "ring_graphs", "random_graph", "edge_homophily"]


def _check_pos(**kw) -> None:
    for k, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{k} must be a positive integer, got {v!r}")


def colour_topology_graphs(num_graphs: int, rng: np.random.Generator, *, min_nodes: int = 40,
                           max_nodes: int = 80, num_colours: int = 5, edge_prob: float = 0.08) -> list[Data]:
    """Three classes fixed by the *relative position* of two colours; features and topology alone say nothing.

    Every graph is a random spanning tree plus Erdős–Rényi chords (same law for all classes) whose nodes carry a
    one-hot colour: exactly one node of colour 0 and one of colour 1, the others drawn uniformly from
    colours 2..C-1. The class is the hop distance between the two special nodes: 1, 2, or ≥ 3.
    So the colour histogram and the graph law are identical across classes.
    """
    _check_pos(num_graphs=num_graphs, min_nodes=min_nodes, max_nodes=max_nodes)
    if max_nodes < min_nodes or num_colours < 3:
        raise ValueError("need max_nodes >= min_nodes and num_colours >= 3")
    out = []
    for i in range(num_graphs):
        label = i % 3
        while True:
            n = int(rng.integers(min_nodes, max_nodes + 1))
            # a uniform random spanning tree plus Erdős–Rényi chords: connected by construction
            G = nx.random_labeled_tree(n, seed=int(rng.integers(2**31)))
            G.add_edges_from(nx.gnp_random_graph(n, edge_prob, seed=int(rng.integers(2**31))).edges())
            u = int(rng.integers(n))
            dist = nx.single_source_shortest_path_length(G, u)
            want = [v for v, d in dist.items() if (d == label + 1 if label < 2 else d >= 3)]
            if want:
                v = int(rng.choice(want))
                break
        colours = rng.integers(2, num_colours, size=n)
        colours[u], colours[v] = 0, 1
        x = torch.nn.functional.one_hot(torch.as_tensor(colours), num_colours).float()
        ei = to_undirected(torch.as_tensor(list(G.edges()), dtype=torch.long).T, num_nodes=n)
        out.append(Data(x=x, edge_index=ei, y=torch.tensor([label])))
    perm = rng.permutation(len(out))
    return [out[j] for j in perm]


def _structural_features(edge_index: torch.Tensor, n: int, max_degree: int = 6) -> torch.Tensor:
    deg = degree(edge_index[0], n).clamp(max=max_degree).long()
    return torch.cat([torch.ones(n, 1), torch.nn.functional.one_hot(deg, max_degree + 1).float()], 1)


def motif_graphs(num_graphs: int, seed: int, *, base_nodes: int = 20) -> list[Data]:
    """BA(``base_nodes``, 1) + one house motif (class 0) or one 5-cycle (class 1), via ``ExplainerDataset``.

    Node features: a constant and the one-hot degree (capped at 6). ``node_mask`` marks the motif
    nodes (the ground-truth explanation).
    """
    from torch_geometric.datasets import ExplainerDataset
    from torch_geometric.datasets.graph_generator import BAGraph

    _check_pos(num_graphs=num_graphs, base_nodes=base_nodes)
    torch.manual_seed(seed)  # ExplainerDataset draws from torch's global generator
    out = []
    per = [(num_graphs + 1) // 2, num_graphs // 2]
    for label, (motif, kw) in enumerate([("house", {}), ("cycle", {"num_nodes": 5})]):
        if per[label] == 0:
            continue
        ds = ExplainerDataset(graph_generator=BAGraph(num_nodes=base_nodes, num_edges=1), motif_generator=motif,
                              motif_generator_kwargs=kw or None, num_motifs=1, num_graphs=per[label])
        for g in ds:
            n = g.node_mask.numel()
            out.append(Data(x=_structural_features(g.edge_index, n), edge_index=g.edge_index,
                            y=torch.tensor([label]), node_mask=g.node_mask.float()))
    rng = np.random.default_rng(seed)
    return [out[j] for j in rng.permutation(len(out))]


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of edges joining nodes of the same class."""
    return float((y[edge_index[0]] == y[edge_index[1]]).float().mean())


def csbm(num_nodes: int, homophily: float, rng: np.random.Generator, *, avg_degree: float = 8.0,
         num_features: int = 16, signal: float = 1.0) -> Data:
    """A two-class contextual SBM whose expected edge homophily is ``homophily``.

    Features ``x_i = s · y_i^± μ + ε`` with ``μ`` a random unit direction, ``ε ~ N(0, I/d)``; edges
    are drawn independently with probability set so that a fraction ``homophily`` of them is intra-class.
    Train/test masks split the nodes 50/50.
    """
    _check_pos(num_nodes=num_nodes, num_features=num_features)
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    y = rng.integers(0, 2, size=num_nodes)
    n_same = (y[:, None] == y[None, :]).sum() - num_nodes
    n_diff = num_nodes * (num_nodes - 1) - n_same
    m = avg_degree * num_nodes  # directed edge slots
    p_in, p_out = min(1.0, homophily * m / n_same), min(1.0, (1 - homophily) * m / n_diff)
    same = y[:, None] == y[None, :]
    prob = np.where(same, p_in, p_out)
    upper = np.triu(rng.random((num_nodes, num_nodes)) < prob, 1)
    src, dst = np.nonzero(upper)
    ei = to_undirected(torch.as_tensor(np.stack([src, dst]), dtype=torch.long), num_nodes=num_nodes)
    mu = rng.normal(size=num_features)
    mu /= np.linalg.norm(mu)
    x = signal * (2 * y[:, None] - 1) * mu[None, :] + rng.normal(size=(num_nodes, num_features)) / np.sqrt(num_features)
    train = np.zeros(num_nodes, dtype=bool)
    train[rng.permutation(num_nodes)[: num_nodes // 2]] = True
    return Data(x=torch.as_tensor(x, dtype=torch.float32), edge_index=ei, y=torch.as_tensor(y),
                train_mask=torch.as_tensor(train), test_mask=torch.as_tensor(~train))


def ring_graphs(num_graphs: int, rng: np.random.Generator, *, length: int = 20, ring: bool = False) -> list[Data]:
    """Long-range toy: a path (or ring) of ``length`` nodes; the class sits on one end, the read-out on the other.

    Features: ``[class one-hot (2), source flag, target flag]``; only the source carries the class.
    ``target_mask`` marks the read-out node, at hop distance ``length - 1`` (path) or
    ``length // 2`` (ring) from the source: out of reach of a 2-layer message-passing network.
    """
    _check_pos(num_graphs=num_graphs, length=length)
    if length < 3:
        raise ValueError(f"length must be >= 3, got {length}")
    G = nx.cycle_graph(length) if ring else nx.path_graph(length)
    ei = from_networkx(G).edge_index
    tgt = length // 2 if ring else length - 1
    out = []
    for i in range(num_graphs):
        label = i % 2
        x = torch.zeros(length, 4)
        x[0, label] = 1.0
        x[0, 2] = 1.0
        x[tgt, 3] = 1.0
        mask = torch.zeros(length, dtype=torch.bool)
        mask[tgt] = True
        out.append(Data(x=x, edge_index=ei, y=torch.full((length,), label), target_mask=mask))
    return [out[j] for j in rng.permutation(len(out))]


def random_graph(num_nodes: int, avg_degree: float, rng: np.random.Generator, *, channels: int = 16) -> Data:
    """A sparse random graph with ``≈ num_nodes · avg_degree`` directed edges and Gaussian features."""
    _check_pos(num_nodes=num_nodes, channels=channels)
    m = max(1, int(num_nodes * avg_degree / 2))
    src = torch.as_tensor(rng.integers(0, num_nodes, size=m))
    dst = torch.as_tensor(rng.integers(0, num_nodes, size=m))
    keep = src != dst
    ei = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=num_nodes)
    x = torch.as_tensor(rng.normal(size=(num_nodes, channels)), dtype=torch.float32)
    return Data(x=x, edge_index=ei)
