"""Domains: contextual SBMs, BA graphs with motifs, users' graphs; input checks and feature cutting.

Everything is generated locally (``torch_geometric.utils.stochastic_blockmodel_graph`` and
``torch_geometric.datasets.ExplainerDataset``); nothing is downloaded.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import stochastic_blockmodel_graph

from paperworks.utils import check_float, check_int

log = logging.getLogger(__name__)

FEATURE_LAWS = ("gaussian", "laplace", "student")
MOTIFS = ("house", "cycle", "grid")


# contextual SBMs ---------------------------------------------------------------------------------

def sbm_probabilities(n_nodes: int, n_blocks: int, homophily: float, avg_degree: float) -> tuple[float, float]:
    """Within- and between-block edge probabilities of an equal-block SBM.

    With blocks of size ``n/K`` the expected edge homophily is ``p_in / (p_in + (K-1) p_out)`` and the
    expected degree ``d = (n/K) (p_in + (K-1) p_out)``, so ``p_in = h d K / n`` and
    ``p_out = (1-h) d K / (n (K-1))``.
    """
    p_in = homophily * avg_degree * n_blocks / n_nodes
    p_out = (1 - homophily) * avg_degree * n_blocks / (n_nodes * (n_blocks - 1))
    if p_in > 1 or p_out > 1:
        raise ValueError(f"avg_degree={avg_degree} is too high for {n_nodes} nodes in {n_blocks} blocks")
    return p_in, p_out


def _noise(gen: torch.Generator, shape, law: str) -> torch.Tensor:
    """Unit-variance noise of the given law."""
    if law == "gaussian":
        return torch.randn(shape, generator=gen)
    u = torch.rand(shape, generator=gen).clamp(1e-7, 1 - 1e-7)
    if law == "laplace":  # inverse CDF, scale 1/sqrt(2) gives variance 1
        return -torch.sign(u - 0.5) * torch.log1p(-2 * (u - 0.5).abs()) / math.sqrt(2)
    # student-t with 5 degrees of freedom, variance 5/3, rescaled to 1
    z = torch.randn(shape, generator=gen)
    chi2 = torch.randn((5, *shape), generator=gen).pow(2).sum(0)
    return z / torch.sqrt(chi2 / 5) / math.sqrt(5 / 3)


def csbm(n_nodes: int, n_blocks: int, *, homophily: float, feature_dim: int, snr: float, seed: int | None = None,
         avg_degree: float = 10.0, feature_law: str = "gaussian") -> Data:
    """A contextual stochastic block model graph.

    ``K = n_blocks`` equal blocks; edges from ``stochastic_blockmodel_graph`` with probabilities chosen so
    that the expected *edge homophily* (fraction of edges joining nodes of one block) is ``homophily``
    and the expected degree ``avg_degree`` (:func:`sbm_probabilities`). Features
    ``x_i = mu_{y_i} + eps_i`` with class means ``mu_k ~ N(0, snr^2 / (2 D) I_D)`` (so two means lie
    about ``snr`` apart) and unit-variance noise ``eps`` of ``feature_law`` (gaussian, laplace or
    student-t with 5 degrees of freedom).

    Returns:
        ``Data(x=[n, feature_dim], edge_index=[2, E], y=[n])`` (undirected, no self-loops).
    """
    n = check_int(n_nodes, "n_nodes", minimum=2)
    k = check_int(n_blocks, "n_blocks", minimum=2, maximum=n)
    h = check_float(homophily, "homophily", minimum=0.0, maximum=1.0)
    dim = check_int(feature_dim, "feature_dim", minimum=1)
    snr = check_float(snr, "snr", minimum=0.0)
    deg = check_float(avg_degree, "avg_degree", minimum=0.0, open_minimum=True)
    seed = check_int(seed, "seed", minimum=0, optional=True)
    if feature_law not in FEATURE_LAWS:
        raise ValueError(f"feature_law must be one of {FEATURE_LAWS}, got {feature_law!r}")
    p_in, p_out = sbm_probabilities(n, k, h, deg)
    sizes = [n // k + (i < n % k) for i in range(k)]
    probs = torch.full((k, k), p_out)
    probs.fill_diagonal_(p_in)
    gen = torch.Generator().manual_seed(seed if seed is not None else int(torch.randint(2**31, ()).item()))
    with torch.random.fork_rng(devices=[]):  # stochastic_blockmodel_graph draws from the global generator
        torch.manual_seed(int(torch.randint(2**31, (), generator=gen)))
        edge_index = stochastic_blockmodel_graph(sizes, probs, directed=False)
    y = torch.repeat_interleave(torch.arange(k), torch.tensor(sizes))
    means = torch.randn(k, dim, generator=gen) * snr / math.sqrt(2 * dim)
    x = means[y] + _noise(gen, (n, dim), feature_law)
    return Data(x=x, edge_index=edge_index, y=y)


# graph-level set: BA graphs with motifs ----------------------------------------------------------

def degree_features(edge_index: torch.Tensor, num_nodes: int, max_degree: int = 10) -> torch.Tensor:
    """One-hot degree (capped at ``max_degree``): the usual features of featureless graphs."""
    deg = torch.zeros(num_nodes, dtype=torch.long).scatter_add_(0, edge_index[0], torch.ones_like(edge_index[0]))
    return torch.nn.functional.one_hot(deg.clamp(max=max_degree), max_degree + 1).float()


def motif_graphs(n_graphs: int, *, motifs=MOTIFS, base_nodes: int = 20, seed: int | None = None) -> list[Data]:
    """``n_graphs`` Barabási–Albert graphs, each with one motif attached (``ExplainerDataset``).

    Graphs cycle through ``motifs`` (house, cycle of 6, 3x3 grid); the graph's label ``y`` is the motif's
    index, the clustering target of the graph-level set. Node features: one-hot degree.
    """
    from torch_geometric.datasets import ExplainerDataset
    from torch_geometric.datasets.graph_generator import BAGraph

    n_graphs = check_int(n_graphs, "n_graphs", minimum=len(motifs))
    base_nodes = check_int(base_nodes, "base_nodes", minimum=3)
    seed = check_int(seed, "seed", minimum=0, optional=True)
    unknown = set(motifs) - set(MOTIFS)
    if unknown:
        raise ValueError(f"motifs must be among {MOTIFS}, got {sorted(unknown)}")
    kwargs = {"cycle": {"num_nodes": 6}}
    counts = [n_graphs // len(motifs) + (i < n_graphs % len(motifs)) for i in range(len(motifs))]
    graphs = []
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        for label, (motif, count) in enumerate(zip(motifs, counts)):
            ds = ExplainerDataset(graph_generator=BAGraph(num_nodes=base_nodes, num_edges=1), motif_generator=motif,
                                  motif_generator_kwargs=kwargs.get(motif), num_motifs=1, num_graphs=count)
            for g in ds:
                n = g.num_nodes
                graphs.append(Data(x=degree_features(g.edge_index, n), edge_index=g.edge_index,
                                   y=torch.tensor([label])))
    order = np.random.default_rng(seed).permutation(len(graphs))
    return [graphs[i] for i in order]


# users' graphs -----------------------------------------------------------------------------------

def _read_rows(path: Path, width: int | None, what: str) -> tuple[list[list[float]], list[int]]:
    """Numeric rows of a text file (comma or whitespace separated, ``#`` comments); bad rows skipped."""
    rows, bad = [], []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            vals = [float(v) for v in line.replace(",", " ").split()]
        except ValueError:
            bad.append(lineno)
            continue
        if (width is not None and len(vals) != width) or not all(math.isfinite(v) for v in vals):
            bad.append(lineno)
            continue
        if width is None:
            width = len(vals)
        rows.append(vals)
    if bad:
        log.warning("%s: skipped %d bad %s row(s) at line(s) %s", path, len(bad), what, bad[:20])
    return rows, bad


def load_graph(path, *, features=None, labels=None) -> tuple[Data, dict]:
    """A user's graph: an edge list (``u v`` per line, 0-based ids) or an ``.npz`` with ``edge_index``/``x``.

    Args:
        path: edge-list text file, or ``.npz`` holding ``edge_index`` (2, E) and ``x`` (n, F)
            (optional ``y``).
        features: for an edge list, a text file of node features, one row per node (row i = node i).
            Without it the nodes get one-hot degree features.
        labels: optional text file of one label per node, read only by the scorer.

    Returns:
        ``(data, report)``; ``report`` counts the bad rows skipped (with their line numbers).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path: no file at {path}")
    report = {"bad_edge_rows": [], "bad_feature_rows": [], "bad_label_rows": []}
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            if "edge_index" not in z or "x" not in z:
                raise ValueError(f"{path} must hold arrays 'edge_index' and 'x', found {sorted(z.files)}")
            data = Data(x=torch.as_tensor(z["x"], dtype=torch.float), edge_index=torch.as_tensor(z["edge_index"]).long())
            if "y" in z:
                data.y = torch.as_tensor(z["y"]).long()
        check_graph(data, "data.path")
        return data, report
    rows, report["bad_edge_rows"] = _read_rows(path, 2, "edge")
    edges = [(int(u), int(v)) for u, v in rows if u >= 0 and v >= 0 and u == int(u) and v == int(v)]
    if not edges:
        raise ValueError(f"data.path: {path} holds no valid edge rows")
    ei = torch.tensor(edges, dtype=torch.long).t()
    ei = torch.cat([ei, ei.flip(0)], 1).unique(dim=1)
    n = int(ei.max()) + 1
    if features is not None:
        frows, report["bad_feature_rows"] = _read_rows(Path(features), None, "feature")
        x = torch.tensor(frows, dtype=torch.float)
        if x.size(0) < n:
            raise ValueError(f"data.features: {x.size(0)} valid feature rows but the edges name {n} nodes")
        n = x.size(0)
    else:
        x = degree_features(ei, n)
    data = Data(x=x, edge_index=ei)
    if labels is not None:
        lrows, report["bad_label_rows"] = _read_rows(Path(labels), 1, "label")
        if len(lrows) != n:
            raise ValueError(f"data.labels: {len(lrows)} valid label rows for {n} nodes")
        data.y = torch.tensor([int(r[0]) for r in lrows])
    check_graph(data, "data.path")
    return data, report


# checks and feature cutting ----------------------------------------------------------------------

def check_graph(data, name: str = "data") -> int:
    """Validate a PyG graph; return its number of isolated nodes (kept, and counted).

    Raises a ``TypeError``/``ValueError`` naming ``name`` for a non-``Data``, a missing or non-finite
    ``x``, or an ``edge_index`` that is not ``(2, E)`` integer with ids in ``[0, n)``.
    """
    if not isinstance(data, Data):
        raise TypeError(f"{name} must be a torch_geometric.data.Data, got {type(data).__name__}")
    x = getattr(data, "x", None)
    if x is None:
        raise ValueError(f"{name} has no node features x (set data.x, e.g. to one-hot degrees)")
    if not torch.is_tensor(x) or x.dim() != 2 or x.size(0) == 0:
        raise ValueError(f"{name}.x must be a 2-D tensor with at least one row, got "
                         f"{tuple(x.shape) if torch.is_tensor(x) else type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name}.x must be a floating-point tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}.x has NaN or inf entries")
    ei = getattr(data, "edge_index", None)
    if ei is None or not torch.is_tensor(ei) or ei.dim() != 2 or ei.size(0) != 2:
        raise ValueError(f"{name}.edge_index must be a (2, E) tensor, got "
                         f"{tuple(ei.shape) if torch.is_tensor(ei) else type(ei).__name__}")
    if ei.dtype not in (torch.long, torch.int):
        raise TypeError(f"{name}.edge_index must be integer, got {ei.dtype}")
    n = x.size(0)
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
        raise ValueError(f"{name}.edge_index has node ids outside [0, {n}) (min {int(ei.min())}, max {int(ei.max())})")
    deg = torch.zeros(n, dtype=torch.long).scatter_add_(0, ei.reshape(-1).long(), torch.ones(ei.numel(), dtype=torch.long))
    return int((deg == 0).sum())


def svd_features(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Cut features to width ``dim`` by the graph's own truncated SVD (PCA).

    ``x`` is centred, ``x = U S V^T``, and the first ``dim`` principal scores ``U_r S_r`` are kept, signs
    fixed so that each component's largest loading is positive (``sklearn``'s ``svd_flip``), divided by
    the first component's standard deviation. Narrower inputs are padded with zero columns. Inferred: the
    abstract says only that domains are aligned; per-graph SVD is the issue's choice.
    """
    from sklearn.utils.extmath import svd_flip

    xc = (x - x.mean(0)).double().cpu().numpy()
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    u, vt = svd_flip(u, vt)
    r = min(dim, s.size)
    z = u[:, :r] * s[:r]
    scale = s[0] / math.sqrt(max(x.size(0), 1)) if s.size and s[0] > 0 else 1.0
    out = np.zeros((x.size(0), dim))
    out[:, :r] = z / scale
    return torch.as_tensor(out, dtype=torch.float)


def as_domain(item, name: str) -> tuple[Data, str]:
    """A node-level domain (one ``Data``) or a graph-level one (a list of ``Data``), batched into one ``Data``.

    Returns ``(data, level)`` with ``data.batch`` set for a graph-level set.
    """
    if isinstance(item, Data):
        check_graph(item, name)
        return item, "node"
    if isinstance(item, (list, tuple)) and item:
        for i, g in enumerate(item):
            check_graph(g, f"{name}[{i}]")
        widths = {g.x.size(1) for g in item}
        if len(widths) > 1:
            raise ValueError(f"{name}: the graphs of one graph-level set must share a feature width, got {sorted(widths)}")
        keep = [Data(x=g.x, edge_index=g.edge_index) for g in item]  # never carry y into the pipeline
        return Batch.from_data_list(keep), "graph"
    raise TypeError(f"{name} must be a Data (node clustering) or a non-empty list of Data (graph clustering), "
                    f"got {type(item).__name__}")
