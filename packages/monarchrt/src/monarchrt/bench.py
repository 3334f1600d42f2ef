"""The benchmark: Monarch attention against dense SDPA, wall and CPU time, and FLOPs.

Timing goes through :func:`paperworks.bench.compare`: the candidates run interleaved (A B, B A, ...)
with the threads pinned, and the speed-up is the median of the per-round paired ratios with a
bootstrap interval. On CPU the torch reference path is timed; on a CUDA machine with triton the
Triton path is timed as well (``sync=torch.cuda.synchronize``), with FlashAttention when
``flash_attn`` is importable.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging

import torch
import torch.nn.functional as F

from monarchrt.fidelity import monarch_for_budget
from monarchrt.monarch import dense_flops, make_plan, monarch_attention, monarch_flops

log = logging.getLogger(__name__)


def bench_cpu(layouts, d: int, budget: float, repeats: int, heads: int = 1, seed: int = 0, *, warmup: int = 1,
              threads=1) -> tuple[list[dict], list]:
    """Dense SDPA vs the Monarch reference path per layout: metrics rows and the ``BenchResult`` s."""
    from paperworks.bench import compare

    rows, results = [], []
    g = torch.Generator().manual_seed(seed)
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        N = layout[0] * layout[1] * layout[2]
        q, k, v = torch.randn(3, 1, heads, N, d, generator=g)
        knobs, ratio = monarch_for_budget(layout, d, budget)
        with torch.no_grad():
            res = compare({"dense": functools.partial(F.scaled_dot_product_attention, q, k, v),
                           "monarch": functools.partial(monarch_attention, q, k, v, layout, backend="torch", **knobs)},
                          repeats=int(repeats), warmup=int(warmup), threads=threads)
        sp = res.speedup("monarch", over="dense")
        log.info("N=%d %s flop ratio %.3f: dense %.3fs monarch %.3fs (%.1fx [%.1f, %.1f])", N, knobs, ratio,
                 res.median("dense"), res.median("monarch"), sp.value, sp.lower, sp.upper)
        rows.append(dict(part="bench", device="cpu", backend="torch", N=N, layout=str(layout), budget=budget,
                         knobs=str(knobs), flop_ratio=ratio, dense_s=res.median("dense"),
                         monarch_s=res.median("monarch"), dense_cpu_s=res.median("dense", "cpu"),
                         monarch_cpu_s=res.median("monarch", "cpu"), speedup=sp.value, speedup_lo=sp.lower,
                         speedup_hi=sp.upper, cpu_speedup=res.speedup("monarch", over="dense", kind="cpu").value,
                         repeats=res.repeats, threads=res.threads))
        results.append(res)
    return rows, results


def bench_cuda(layouts, d: int, budgets, heads: int = 8, seed: int = 0, *, repeats: int = 15,
               warmup: int = 3) -> list[dict]:
    """Triton Monarch vs SDPA (and FlashAttention if installed) on CUDA, fp32 inputs (fp16 for FlashAttention)."""
    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        return []
    from paperworks.bench import compare

    rows = []
    g = torch.Generator(device="cuda").manual_seed(seed)
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        N = layout[0] * layout[1] * layout[2]
        q, k, v = torch.randn(3, 1, heads, N, d, device="cuda", generator=g)
        cands = {"sdpa": functools.partial(F.scaled_dot_product_attention, q, k, v)}
        if importlib.util.find_spec("flash_attn") is not None:
            # optional comparator on CUDA machines only (not a dependency: it needs a GPU build)
            flash_attn_func = importlib.import_module("flash_attn").flash_attn_func
            qh, kh, vh = (t.transpose(1, 2).half().contiguous() for t in (q, k, v))
            cands["flash"] = functools.partial(flash_attn_func, qh, kh, vh)
        knobs = {}
        for budget in budgets:
            knobs[budget], _ = monarch_for_budget(layout, d, budget)
            cands[f"monarch@{budget:g}"] = functools.partial(monarch_attention, q, k, v, layout, **knobs[budget])
        with torch.no_grad():
            res = compare(cands, repeats=int(repeats), warmup=int(warmup), threads=None, sync=torch.cuda.synchronize)
        for budget in budgets:
            name = f"monarch@{budget:g}"
            sp = res.speedup(name, over="sdpa")
            rows.append(dict(part="bench", device="cuda", backend="triton", N=N, layout=str(layout), budget=budget,
                             knobs=str(knobs[budget]), flop_ratio=monarch_for_budget(layout, d, budget)[1],
                             dense_s=res.median("sdpa"), flash_s=res.median("flash") if "flash" in cands else None,
                             monarch_s=res.median(name), speedup=sp.value, speedup_lo=sp.lower, speedup_hi=sp.upper,
                             repeats=res.repeats))
    return rows


def flops_table(layouts, d: int, budget: float) -> list[dict]:
    out = []
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        knobs, _ = monarch_for_budget(layout, d, budget)
        plan = make_plan(layout, **knobs)
        out.append(dict(N=plan.N, monarch_flops=monarch_flops(plan, d), dense_flops=dense_flops(plan.N, d)))
    return out
