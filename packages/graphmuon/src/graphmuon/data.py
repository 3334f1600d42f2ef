"""Graphs generated locally (nothing is downloaded).

- :func:`csbm`: a contextual stochastic block model (PyG's ``stochastic_blockmodel_graph`` plus
  Gaussian features around class means) with a chosen homophily and mean degree.
- :func:`identity_graph`: the same nodes with no edges (GCN/SGC then reduce to an MLP): the null regime.
- :func:`graph_classification`: networkx graphs from four generators (SBM, Erdős–Rényi,
  Watts–Strogatz, Barabási–Albert) of similar size and mean degree; the label is the generator.

A user's graphs, by path:

- :func:`load_planetoid`: the Planetoid raw files (``ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index}``,
  the Cora/CiteSeer/PubMed format) through PyG's own reader, offline, with the standard split.
- :func:`load_edge_list`: an edge-list file, a labels file and (optionally) a features file.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import ToSparseTensor
from torch_geometric.utils import stochastic_blockmodel_graph, to_undirected

log = logging.getLogger(__name__)


def _masks(n: int, rng: np.random.Generator, train: float, val: float) -> tuple[torch.Tensor, ...]:
    if not (0 < train < 1 and 0 < val < 1 and train + val < 1):
        raise ValueError(f"train and val must be fractions with train + val < 1, got {train}, {val}")
    perm = torch.from_numpy(rng.permutation(n))
    a, b = int(train * n), int((train + val) * n)
    masks = []
    for idx in (perm[:a], perm[a:b], perm[b:]):
        m = torch.zeros(n, dtype=torch.bool)
        m[idx] = True
        masks.append(m)
    return tuple(masks)


def csbm(seed: int, *, n: int = 3000, classes: int = 5, features: int = 64, homophily: float = 0.8,
         degree: float = 5.0, signal: float = 1.5, train: float = 0.5, val: float = 0.25) -> Data:
    """A CSBM graph as a PyG ``Data`` with ``train_mask``/``val_mask``/``test_mask``.

    Each class has ``n / classes`` nodes; a node has on average ``degree`` neighbours, a fraction
    ``homophily`` of them in its own class. Features are ``μ_y + N(0, I)`` with random class means
    of norm ``signal``.
    """
    if n < classes or classes < 2:
        raise ValueError(f"need n >= classes >= 2, got n={n}, classes={classes}")
    if not 0 <= homophily <= 1:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    if degree <= 0 or degree >= n:
        raise ValueError(f"degree must be in (0, n), got {degree}")
    rng = np.random.default_rng(seed)
    sizes = [n // classes + (1 if i < n % classes else 0) for i in range(classes)]
    p_in = homophily * degree / max(sizes[0] - 1, 1)
    p_out = (1 - homophily) * degree / max(n - sizes[0], 1)
    probs = torch.full((classes, classes), min(p_out, 1.0))
    probs.fill_diagonal_(min(p_in, 1.0))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        edge_index = stochastic_blockmodel_graph(sizes, probs)
    y = torch.cat([torch.full((s,), i, dtype=torch.long) for i, s in enumerate(sizes)])
    means = rng.normal(size=(classes, features))
    means *= signal / np.linalg.norm(means, axis=1, keepdims=True)
    x = torch.from_numpy(means[y.numpy()] + rng.normal(size=(n, features))).float()
    tr, va, te = _masks(n, rng, train, val)
    return Data(x=x, edge_index=edge_index, y=y, train_mask=tr, val_mask=va, test_mask=te)


def with_sparse_adjacency(data):
    """A copy of ``data`` with ``adj_t``, a ``torch.sparse_csr`` adjacency (PyG's ``ToSparseTensor``).

    Message passing with it is a sparse-dense matmul, several times faster on CPU than the
    scatter path over ``edge_index``; the layers (and GraphMuon's captures) accept either.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return ToSparseTensor(layout=torch.sparse_csr)(data.clone())


def identity_graph(data: Data) -> Data:
    """``data`` with every edge removed (Â = I once a layer adds self-loops)."""
    out = data.clone()
    out.edge_index = torch.empty(2, 0, dtype=torch.long)
    return out


def _random_graph(kind: str, n: int, degree: float, rng: np.random.Generator) -> nx.Graph:
    s = int(rng.integers(2**31))
    if kind == "sbm":
        half = [n // 2, n - n // 2]
        p_in, p_out = 0.85 * degree / (n / 2), 0.15 * degree / (n / 2)
        return nx.stochastic_block_model(half, [[p_in, p_out], [p_out, p_in]], seed=s)
    if kind == "er":
        return nx.gnp_random_graph(n, degree / (n - 1), seed=s)
    if kind == "ws":
        return nx.connected_watts_strogatz_graph(n, max(2, round(degree)), 0.1, seed=s)
    if kind == "ba":
        return nx.barabasi_albert_graph(n, max(1, round(degree / 2)), seed=s)
    raise ValueError(f"kind must be 'sbm', 'er', 'ws' or 'ba', got {kind!r}")


GENERATORS = ("sbm", "er", "ws", "ba")


def graph_classification(seed: int, *, graphs: int = 1000, min_nodes: int = 20, max_nodes: int = 40,
                         degree: float = 4.0, max_degree: int = 10, train: float = 0.6, val: float = 0.2) -> Batch:
    """``graphs`` networkx graphs (label = generator) as one PyG ``Batch`` with graph-level masks.

    Node features: one-hot degree, clipped at ``max_degree`` (``max_degree + 1`` columns).
    """
    if graphs < len(GENERATORS) or not 2 <= min_nodes <= max_nodes:
        raise ValueError(f"need graphs >= 4 and 2 <= min_nodes <= max_nodes, got {graphs}, {min_nodes}, {max_nodes}")
    rng = np.random.default_rng(seed)
    items = []
    for i in range(graphs):
        label = i % len(GENERATORS)
        g = _random_graph(GENERATORS[label], int(rng.integers(min_nodes, max_nodes + 1)), degree, rng)
        n = g.number_of_nodes()
        edges = torch.tensor(list(g.edges()), dtype=torch.long).reshape(-1, 2).T
        edge_index = to_undirected(edges, num_nodes=n)
        deg = torch.tensor([d for _, d in sorted(g.degree())]).clamp(max=max_degree)
        x = torch.nn.functional.one_hot(deg, max_degree + 1).float()
        items.append(Data(x=x, edge_index=edge_index, y=torch.tensor([label])))
    order = rng.permutation(graphs)
    batch = Batch.from_data_list([items[i] for i in order])
    tr, va, te = _masks(graphs, rng, train, val)
    batch.train_mask, batch.val_mask, batch.test_mask = tr, va, te
    return batch


PLANETOID_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def _planetoid_folder(root: Path, name: str | None) -> tuple[Path, str]:
    folders = [root, root / "raw"]
    if name:
        folders += [root / name / "raw", root / name]
    for folder in folders:
        if not folder.is_dir():
            continue
        prefixes = sorted(f.name[len("ind."):-len(".x")] for f in folder.glob("ind.*.x"))
        if name:
            prefixes = [p for p in prefixes if p == name.lower()]
        if len(prefixes) == 1:
            return folder, prefixes[0]
        if len(prefixes) > 1:
            raise ValueError(f"{folder} holds several Planetoid data sets {prefixes}: pass data.name=")
    raise FileNotFoundError(f"no Planetoid raw files (ind.<name>.x, ...) under {root} (looked in "
                            f"{', '.join(str(f) for f in folders)})")


def load_planetoid(root, name: str | None = None) -> Data:
    """A Planetoid data set (Cora, CiteSeer, PubMed format) read from its raw files, offline.

    Args:
        root: the folder holding ``ind.<name>.x`` ... ``ind.<name>.test.index`` (or its ``raw/``
            sub-folder, or ``<root>/<name>/raw`` as PyG's ``Planetoid(root, name)`` lays them out).
        name: the data set's prefix (``"cora"``; default: the only one in the folder).

    Returns:
        A ``Data`` with ``x``, ``edge_index``, ``y`` and the standard public split masks
        (PyG's ``read_planetoid_data``). The raw files are Python pickles (the format's own): read
        only files you trust.
    """
    from torch_geometric.io import read_planetoid_data

    root = Path(root).expanduser()
    folder, prefix = _planetoid_folder(root, name)
    missing = [f"ind.{prefix}.{n}" for n in PLANETOID_FILES if not (folder / f"ind.{prefix}.{n}").is_file()]
    if missing:
        raise FileNotFoundError(f"Planetoid files missing in {folder}: {missing}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        data = read_planetoid_data(str(folder), prefix)
    if not torch.isfinite(data.x).all():
        raise ValueError(f"Planetoid features in {folder} contain NaN or inf")
    return data


def _rows(path: Path, what: str):
    """``(line number, fields)`` of a whitespace- or comma-separated file; ``#`` starts a comment."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.split("#", 1)[0].replace(",", " ").strip()
            if line:
                yield i, line.split()


def _report_bad(bad: list[int], path: Path, what: str) -> None:
    if bad:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
        log.warning("%s %s: skipped %d bad row(s), line(s) %s", what, path, len(bad), shown)
        warnings.warn(f"{what} {path}: skipped {len(bad)} bad row(s) (lines {shown})", stacklevel=3)


def load_edge_list(edges, labels, features=None, *, seed: int = 0, train: float = 0.5, val: float = 0.25,
                   undirected: bool = True) -> Data:
    """A node-classification graph from plain text files.

    Args:
        edges: one edge per line, ``src dst`` (node ids: any tokens; whitespace or commas).
        labels: one node per line, ``node label`` (labels: any tokens, mapped to 0..C−1 in sorted order).
            Only labelled nodes are kept; edges to unknown nodes are dropped and counted.
        features: optional, ``node f1 f2 ...`` per line (the same number of values on every row); without
            it every node gets the constant feature 1 and the graph alone carries the signal.
        seed, train, val: the random split of the labelled nodes.
        undirected: add the reverse of every edge (default True).

    Bad rows (wrong field count, non-numeric features, NaN/inf, duplicate nodes) are skipped, counted
    and reported with their line numbers in a warning.
    """
    edges, labels = Path(edges).expanduser(), Path(labels).expanduser()
    bad: list[int] = []
    label_of: dict[str, str] = {}
    for i, f in _rows(labels, "labels"):
        if len(f) != 2 or f[0] in label_of:
            bad.append(i)
            continue
        label_of[f[0]] = f[1]
    _report_bad(bad, labels, "labels")
    if len(label_of) < 2:
        raise ValueError(f"labels file {labels} has fewer than 2 labelled nodes")
    nodes = sorted(label_of)
    index = {v: i for i, v in enumerate(nodes)}
    classes = sorted(set(label_of.values()))
    if len(classes) < 2:
        raise ValueError(f"labels file {labels} has a single class {classes}")
    cls_index = {c: i for i, c in enumerate(classes)}
    y = torch.tensor([cls_index[label_of[v]] for v in nodes])
    bad, src, dst, unknown = [], [], [], 0
    for i, f in _rows(edges, "edges"):
        if len(f) != 2:
            bad.append(i)
            continue
        if f[0] not in index or f[1] not in index:
            unknown += 1
            continue
        src.append(index[f[0]])
        dst.append(index[f[1]])
    _report_bad(bad, edges, "edges")
    if unknown:
        log.warning("edges %s: dropped %d edge(s) with an unlabelled endpoint", edges, unknown)
    if not src:
        raise ValueError(f"edges file {edges} has no edge between labelled nodes")
    edge_index = torch.tensor([src, dst], dtype=torch.long)
    n = len(nodes)
    edge_index = to_undirected(edge_index, num_nodes=n) if undirected else edge_index
    if features is None:
        x = torch.ones(n, 1)
    else:
        features = Path(features).expanduser()
        bad, rows, width = [], {}, None
        for i, f in _rows(features, "features"):
            try:
                vals = [float(v) for v in f[1:]]
            except ValueError:
                bad.append(i)
                continue
            if not vals or (width is not None and len(vals) != width) or f[0] in rows or not np.isfinite(vals).all():
                bad.append(i)
                continue
            width = len(vals)
            rows[f[0]] = vals
        _report_bad(bad, features, "features")
        missing = [v for v in nodes if v not in rows]
        if missing:
            raise ValueError(f"features file {features} has no (valid) row for {len(missing)} labelled node(s), "
                             f"e.g. {missing[:5]}")
        x = torch.tensor([rows[v] for v in nodes], dtype=torch.float32)
    tr, va, te = _masks(n, np.random.default_rng(seed), train, val)
    return Data(x=x, edge_index=edge_index, y=y, train_mask=tr, val_mask=va, test_mask=te)
