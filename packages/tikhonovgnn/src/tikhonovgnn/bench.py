"""Forward+backward time and peak memory: dense and CG Tikhonov paths against a 2-layer GCN.

Time goes through :func:`paperworks.bench.compare`: for each graph size the candidates run
interleaved on the same graph with the threads pinned, and the time ratio to the GCN is the
median of per-round paired ratios with a bootstrap interval. Memory goes through
:func:`paperworks.bench.peak_memory`: one fresh process per measurement, the graph and the model
built by :func:`make_case` before the counter is reset, so only the pass itself is charged.

CG's cost depends on the conditioning of ``p(L) + Q``, hence on the spread of ``q``; an untrained
Q-network gives ``q ≈ 1`` and flatters CG. :func:`trained_q_and_p` trains the ring model of the
``paper`` experiment and returns its gauge-fixed ``q`` values and its ``p``; the benchmarked layer
then uses ``q`` drawn from those values (:class:`FixedQLayer`) and that ``p``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

__all__ = ["METHODS", "FixedQLayer", "trained_q_and_p", "make_case", "forward_backward", "time_methods",
           "time_skewed_batch", "memory_mib"]

METHODS = ("gcn", "cg", "cg_cheb", "dense")
"""``cg``: CG with de Casteljau (the default); ``cg_cheb``: CG with ``p_recursion="chebyshev"``."""


def trained_q_and_p(*, seed: int = 0, graphs: int = 200, length: int = 20, epochs: int = 60, degree: int = 4,
                    hidden: int = 32, lr: float = 0.01) -> dict:
    """Train the ring model (one Tikhonov layer, node task) and return its explanation.

    Returns ``{"q": [...] gauge-fixed q on the test graphs' nodes, "theta": [...] Bernstein
    coefficients of p, "test_acc": float}``.
    """
    import torch
    from torch_geometric.data import Batch

    from tikhonovgnn.baselines import make_model
    from tikhonovgnn.data import ring_graphs
    from tikhonovgnn.train import node_accuracy, train_node_classifier

    data = ring_graphs(int(graphs), np.random.default_rng(seed), length=int(length), ring=True)
    k = int(0.7 * len(data))
    torch.manual_seed(seed)
    model = make_model("tikhonov", data[0].x.size(1), int(hidden), 2, task="node",
                       tikhonov={"degree": int(degree), "solver": "dense"})
    train_node_classifier(model, data[:k], mask_key="target_mask", epochs=int(epochs), lr=float(lr), seed=seed,
                          name="ring model")
    b = Batch.from_data_list(data[k:])
    e = model.explain(b.x, b.edge_index, b.batch)
    return {"q": e["q"].tolist(), "theta": e["theta"].tolist(),
            "test_acc": node_accuracy(model, data[k:], mask_key="target_mask")}


class FixedQLayer(nn.Module):
    """A :class:`~tikhonovgnn.TikhonovLayer` whose ``q`` is a given vector (a trainable leaf).

    ``forward(x, edge_index)`` checks the graph as the layer does and returns
    ``(p(L) + diag(q))^{-1} diag(q) x W + b``; ``q`` receives a gradient as a Q-network's output would.
    """

    def __init__(self, layer, q):
        super().__init__()
        self.layer = layer
        self.q = nn.Parameter(torch.as_tensor(q, dtype=torch.float32))

    def forward(self, x, edge_index):
        edge_index, w = self.layer._graph(x, edge_index, None, None)
        out = self.layer.propagate(self.layer.lin(x), edge_index, self.q, None, w)
        return out + self.layer.bias


def _tikhonov(method, channels, degree, cg_tol, theta, q_pool, num_nodes, seed):
    import torch

    from tikhonovgnn.tikhonov import TikhonovLayer

    th = torch.as_tensor(theta, dtype=torch.float32) if theta is not None else \
        torch.linspace(0.0, 4.0, degree + 1).clamp_min(1e-3)
    layer = TikhonovLayer(channels, channels, degree=th.numel() - 1, solver="dense" if method == "dense" else "cg",
                          cg_tol=cg_tol, p_recursion="chebyshev" if method == "cg_cheb" else "bernstein")
    with torch.no_grad():
        layer.poly.raw.copy_(torch.log(torch.expm1(th.clamp_min(1e-6))))
    if q_pool is None:
        return layer
    q = np.random.default_rng(seed + 1).choice(np.asarray(q_pool, dtype=np.float64), size=num_nodes)
    return FixedQLayer(layer, q / q.mean())


def make_case(method: str, num_nodes: int, *, avg_degree: float = 10.0, channels: int = 16, degree: int = 3,
              seed: int = 0, cg_tol: float = 1e-5, threads: int | None = None, graph=None, theta=None,
              q_pool=None) -> tuple:
    """``(model, x, edge_index)`` for one forward+backward pass of ``method`` on a random graph.

    ``method``: ``"dense"`` / ``"cg"`` / ``"cg_cheb"`` (a :class:`~tikhonovgnn.TikhonovLayer`,
    ``channels → channels``; ``cg_cheb`` applies ``p`` through its Chebyshev expansion)
    or ``"gcn"`` (PyG ``GCN``, 2 layers, hidden ``channels``). ``theta``: Bernstein coefficients of ``p``
    (default: ``0, …, 4`` of degree ``degree``, a low-pass filter). ``q_pool``: values ``q`` is drawn
    from (a trained model's, see :func:`trained_q_and_p`; default: the layer's own untrained Q-network).
    ``threads`` pins the process's threads (for a fresh process); ``graph`` reuses a built graph.
    """
    import torch
    from torch_geometric.nn.models import GCN

    from tikhonovgnn.data import random_graph

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if threads is not None:
        from paperworks.threads import set_threads

        set_threads(int(threads))
    g = graph if graph is not None else random_graph(num_nodes, avg_degree, np.random.default_rng(seed),
                                                     channels=channels)
    torch.manual_seed(seed)
    if method == "gcn":
        model = GCN(channels, channels, 2)
    else:
        model = _tikhonov(method, channels, degree, cg_tol, theta, q_pool, g.num_nodes, seed)
    return model, g.x.clone().requires_grad_(True), g.edge_index


def forward_backward(model, x, edge_index, batch=None) -> None:
    """One forward and backward pass (the unit that is timed and whose memory is measured)."""
    out = model(x, edge_index) if batch is None else model(x, edge_index, batch)
    out.square().mean().backward()
    model.zero_grad(set_to_none=True)
    x.grad = None


def time_methods(methods, num_nodes: int, *, repeats: int = 5, warmup: int = 1, threads=1, avg_degree: float = 10.0,
                 channels: int = 16, degree: int = 3, seed: int = 0, cg_tol: float = 1e-5, theta=None,
                 q_pool=None):
    """Time ``methods`` on one random graph of ``num_nodes`` nodes, interleaved.

    Returns ``(BenchResult, num_edges, cg_iterations)``; ``res.speedup("gcn", over="cg")`` is
    time(CG) / time(GCN); ``cg_iterations[method]`` are the forward and backward CG iterations of the
    last pass of each CG method.
    """
    from paperworks.bench import compare
    from tikhonovgnn.data import random_graph

    methods = list(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"method must be one of {METHODS}, got {bad}")
    g = random_graph(num_nodes, avg_degree, np.random.default_rng(seed), channels=channels)
    cases = {m: make_case(m, num_nodes, channels=channels, degree=degree, seed=seed, cg_tol=cg_tol, graph=g,
                          theta=theta, q_pool=q_pool) for m in methods}
    res = compare({m: functools.partial(forward_backward, *cases[m]) for m in methods}, repeats=repeats,
                  warmup=warmup, threads=threads)
    its = {}
    for m in ("cg", "cg_cheb"):
        if m in cases:
            model = cases[m][0]
            its[m] = list(getattr(model, "layer", model).last_cg_iterations)
    return res, int(g.edge_index.size(1)), its


def time_skewed_batch(*, small: int = 31, small_nodes: int = 40, large_nodes: int = 1500, avg_degree: float = 10.0,
                      channels: int = 16, degree: int = 4, repeats: int = 5, warmup: int = 1, threads=1, seed: int = 0):
    """``solver="auto"`` against ``"cg"`` on a skewed batch: ``small`` graphs of ``small_nodes`` and one of
    ``large_nodes`` (the batch that padding turns into ``small + 1`` dense ``large_nodes²`` systems).

    The layers share their weights (an untrained Q-network). Returns a ``BenchResult`` with candidates
    ``"auto"`` and ``"cg"``.
    """
    import torch
    from torch_geometric.data import Batch

    from paperworks.bench import compare
    from tikhonovgnn.data import random_graph
    from tikhonovgnn.tikhonov import TikhonovLayer

    rng = np.random.default_rng(seed)
    graphs = [random_graph(small_nodes, avg_degree, rng, channels=channels) for _ in range(small)]
    graphs.append(random_graph(large_nodes, avg_degree, rng, channels=channels))
    b = Batch.from_data_list(graphs)
    torch.manual_seed(seed)
    layers = {s: TikhonovLayer(channels, channels, degree=degree, solver=s) for s in ("auto", "cg")}
    layers["cg"].load_state_dict(layers["auto"].state_dict())
    x = b.x.clone().requires_grad_(True)
    return compare({s: functools.partial(forward_backward, m, x, b.edge_index, b.batch) for s, m in layers.items()},
                   repeats=repeats, warmup=warmup, threads=threads)


def memory_mib(method: str, num_nodes: int, *, threads: int = 1, timeout: float = 900.0, **case) -> float:
    """Peak memory (MiB) of one forward+backward pass, in a fresh process, above the built inputs."""
    from paperworks.bench import peak_memory

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    setup = functools.partial(make_case, method, int(num_nodes), threads=int(threads), **case)
    return peak_memory(forward_backward, setup=setup, timeout=timeout).mib
