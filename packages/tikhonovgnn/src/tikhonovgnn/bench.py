"""Forward+backward time and peak memory: dense and CG Tikhonov paths against a 2-layer GCN.

Each method runs in its own fresh process (``multiprocessing`` spawn), sizes in ascending order, and
a measurement's memory is the rise of the peak resident set (``ru_maxrss``) over its value after
building that size's graph. Ascending sizes make each peak the largest so far, so the rise is that
size's own (a fresh process per measurement would be cleaner but costs a Python + torch start-up each).
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import time

import numpy as np

__all__ = ["measure", "measure_series", "measure_isolated"]


def measure(method: str, num_nodes: int, *, avg_degree: float = 10.0, channels: int = 16, degree: int = 3,
            repeats: int = 2, seed: int = 0, threads: int = 1, cg_tol: float = 1e-5) -> dict:
    """Median wall time of one forward+backward pass and peak extra memory (MiB) of ``method``.

    ``method``: ``"dense"`` / ``"cg"`` (a :class:`~tikhonovgnn.TikhonovLayer`, ``channels → channels``)
    or ``"gcn"`` (PyG ``GCN``, 2 layers, hidden ``channels``). The Tikhonov layer gets a non-flat
    ``p`` (Bernstein coefficients ``0, …, 4``, a low-pass filter) so CG has real work to do.
    """
    import torch
    from torch_geometric.nn.models import GCN

    from tikhonovgnn.data import random_graph
    from tikhonovgnn.tikhonov import TikhonovLayer

    if method not in ("dense", "cg", "gcn"):
        raise ValueError(f"method must be 'dense', 'cg' or 'gcn', got {method!r}")
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    g = random_graph(num_nodes, avg_degree, np.random.default_rng(seed), channels=channels)
    if method == "gcn":
        model = GCN(channels, channels, 2)
    else:
        model = TikhonovLayer(channels, channels, degree=degree, solver=method, cg_tol=cg_tol)
        with torch.no_grad():
            theta = torch.linspace(0.0, 4.0, degree + 1).clamp_min(1e-3)
            model.poly.raw.copy_(torch.log(torch.expm1(theta)))
    x = g.x.requires_grad_(True)
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(repeats + 1):  # the first pass warms up
        t0 = time.perf_counter()
        out = model(x, g.edge_index)
        out.square().mean().backward()
        times.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=True)
        x.grad = None
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"method": method, "num_nodes": num_nodes, "num_edges": int(g.edge_index.size(1)),
            "time_s": float(np.median(times[1:])), "peak_extra_mib": max(peak_kb - base_kb, 0) / 1024.0}


def measure_series(method: str, sizes, **kwargs) -> list[dict]:
    """:func:`measure` for each size, in ascending order."""
    return [measure(method, int(n), **kwargs) for n in sorted(int(n) for n in sizes)]


def _worker(queue, args, kwargs):
    try:
        queue.put(("ok", measure_series(*args, **kwargs)))
    except BaseException as e:  # report, do not hang the parent
        queue.put(("error", f"{type(e).__name__}: {e}"))


def measure_isolated(method: str, sizes, *, timeout: float = 600.0, **kwargs) -> list[dict]:
    """:func:`measure_series` in a fresh spawned process (peak memory not polluted by other methods)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_worker, args=(queue, (method, list(sizes)), kwargs))
    proc.start()
    try:
        status, value = queue.get(timeout=timeout)
    finally:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
    if status != "ok":
        raise RuntimeError(f"benchmark {method} failed: {value}")
    return value
