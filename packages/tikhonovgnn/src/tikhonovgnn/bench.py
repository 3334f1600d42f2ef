"""Forward+backward time and peak memory: dense and CG Tikhonov paths against a 2-layer GCN.

Time goes through :func:`paperworks.bench.compare`: for each graph size the candidates run
interleaved on the same graph with the threads pinned, and the time ratio to the GCN is the
median of per-round paired ratios with a bootstrap interval. Memory goes through
:func:`paperworks.bench.peak_memory`: one fresh process per measurement, the graph and the model
built by :func:`make_case` before the counter is reset, so only the pass itself is charged.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["METHODS", "make_case", "forward_backward", "time_methods", "memory_mib"]

METHODS = ("gcn", "cg", "dense")


def make_case(method: str, num_nodes: int, *, avg_degree: float = 10.0, channels: int = 16, degree: int = 3,
              seed: int = 0, cg_tol: float = 1e-5, threads: int | None = None, graph=None) -> tuple:
    """``(model, x, edge_index)`` for one forward+backward pass of ``method`` on a random graph.

    ``method``: ``"dense"`` / ``"cg"`` (a :class:`~tikhonovgnn.TikhonovLayer`, ``channels → channels``)
    or ``"gcn"`` (PyG ``GCN``, 2 layers, hidden ``channels``). The Tikhonov layer gets a non-flat
    ``p`` (Bernstein coefficients ``0, …, 4``, a low-pass filter) so CG has real work to do.
    ``threads`` pins the process's threads (for a fresh process); ``graph`` reuses a built graph.
    """
    import torch
    from torch_geometric.nn.models import GCN

    from tikhonovgnn.data import random_graph
    from tikhonovgnn.tikhonov import TikhonovLayer

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
        model = TikhonovLayer(channels, channels, degree=degree, solver=method, cg_tol=cg_tol)
        with torch.no_grad():
            theta = torch.linspace(0.0, 4.0, degree + 1).clamp_min(1e-3)
            model.poly.raw.copy_(torch.log(torch.expm1(theta)))
    return model, g.x.clone().requires_grad_(True), g.edge_index


def forward_backward(model, x, edge_index) -> None:
    """One forward and backward pass (the unit that is timed and whose memory is measured)."""
    out = model(x, edge_index)
    out.square().mean().backward()
    model.zero_grad(set_to_none=True)
    x.grad = None


def time_methods(methods, num_nodes: int, *, repeats: int = 5, warmup: int = 1, threads=1, avg_degree: float = 10.0,
                 channels: int = 16, degree: int = 3, seed: int = 0, cg_tol: float = 1e-5):
    """Time ``methods`` on one random graph of ``num_nodes`` nodes, interleaved.

    Returns ``(BenchResult, num_edges)``; ``res.speedup("gcn", over="cg")`` is time(CG) / time(GCN).
    """
    from paperworks.bench import compare
    from tikhonovgnn.data import random_graph

    methods = list(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"method must be one of {METHODS}, got {bad}")
    g = random_graph(num_nodes, avg_degree, np.random.default_rng(seed), channels=channels)
    cases = {m: make_case(m, num_nodes, channels=channels, degree=degree, seed=seed, cg_tol=cg_tol, graph=g)
             for m in methods}
    res = compare({m: functools.partial(forward_backward, *cases[m]) for m in methods}, repeats=repeats,
                  warmup=warmup, threads=threads)
    return res, int(g.edge_index.size(1))


def memory_mib(method: str, num_nodes: int, *, threads: int = 1, timeout: float = 900.0, **case) -> float:
    """Peak memory (MiB) of one forward+backward pass, in a fresh process, above the built inputs."""
    from paperworks.bench import peak_memory

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    setup = functools.partial(make_case, method, int(num_nodes), threads=int(threads), **case)
    return peak_memory(forward_backward, setup=setup, timeout=timeout).mib
