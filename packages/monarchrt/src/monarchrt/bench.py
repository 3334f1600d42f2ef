"""The benchmark: Monarch attention against dense SDPA, wall time and FLOPs.

On CPU the torch reference path is timed (median of ``repeats`` calls after a warm-up). On a CUDA
machine with triton the same script also times the Triton path with ``triton.testing.do_bench``
(and FlashAttention when ``flash_attn`` is importable) at each FLOP budget.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import statistics
import time

import torch
import torch.nn.functional as F

from monarchrt.fidelity import monarch_for_budget
from monarchrt.monarch import dense_flops, make_plan, monarch_attention, monarch_flops

log = logging.getLogger(__name__)


def _time(fn, repeats: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_cpu(layouts, d: int, budget: float, repeats: int, heads: int = 1, seed: int = 0) -> list[dict]:
    rows = []
    g = torch.Generator().manual_seed(seed)
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        N = layout[0] * layout[1] * layout[2]
        q, k, v = torch.randn(3, 1, heads, N, d, generator=g)
        knobs, ratio = monarch_for_budget(layout, d, budget)
        with torch.no_grad():
            t_dense = _time(functools.partial(F.scaled_dot_product_attention, q, k, v), repeats)
            t_mon = _time(functools.partial(monarch_attention, q, k, v, layout, backend="torch", **knobs), repeats)
        speed = [a / b for a, b in zip(t_dense, t_mon)]
        log.info("N=%d %s flop ratio %.3f: dense %.3fs monarch %.3fs (%.1fx)", N, knobs, ratio,
                 statistics.median(t_dense), statistics.median(t_mon), statistics.median(speed))
        rows.append(dict(part="bench", device="cpu", backend="torch", N=N, layout=str(layout), budget=budget,
                         knobs=str(knobs), flop_ratio=ratio, dense_s=statistics.median(t_dense),
                         monarch_s=statistics.median(t_mon), speedup=statistics.median(speed),
                         speedups=speed))
    return rows


def bench_cuda(layouts, d: int, budgets, heads: int = 8, seed: int = 0) -> list[dict]:
    """Triton Monarch vs SDPA (and FlashAttention if installed) on CUDA, bf16 inputs cast to fp32 kernel."""
    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        return []
    from triton.testing import do_bench

    rows = []
    g = torch.Generator(device="cuda").manual_seed(seed)
    for layout in layouts:
        N = layout[0] * layout[1] * layout[2]
        q, k, v = torch.randn(3, 1, heads, N, d, device="cuda", generator=g)
        t_sdpa = do_bench(functools.partial(F.scaled_dot_product_attention, q, k, v))
        t_fa = float("nan")
        if importlib.util.find_spec("flash_attn") is not None:
            # optional comparator on CUDA machines only (not a dependency: it needs a GPU build)
            flash_attn_func = importlib.import_module("flash_attn").flash_attn_func
            qh, kh, vh = (t.transpose(1, 2).half().contiguous() for t in (q, k, v))
            t_fa = do_bench(functools.partial(flash_attn_func, qh, kh, vh))
        for budget in budgets:
            knobs, ratio = monarch_for_budget(tuple(layout), d, budget)
            t_mon = do_bench(functools.partial(monarch_attention, q, k, v, tuple(layout), **knobs))
            rows.append(dict(part="bench", device="cuda", backend="triton", N=N, layout=str(tuple(layout)),
                             budget=budget, knobs=str(knobs), flop_ratio=ratio, dense_s=t_sdpa / 1e3,
                             flash_s=t_fa / 1e3, monarch_s=t_mon / 1e3, speedup=t_sdpa / t_mon))
    return rows


def flops_table(layouts, d: int, budget: float) -> list[dict]:
    out = []
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        knobs, _ = monarch_for_budget(layout, d, budget)
        plan = make_plan(layout, **knobs)
        out.append(dict(N=plan.N, monarch_flops=monarch_flops(plan, d), dense_flops=dense_flops(plan.N, d)))
    return out
