"""The benchmark: Monarch attention against dense SDPA, wall and CPU time, and FLOPs.

Timing goes through :func:`paperworks.bench.compare`: the candidates run interleaved (A B, B A, ...)
with the threads pinned, and the speed-up is the median of the per-round paired ratios with a
bootstrap interval. On CPU the torch reference path is timed (:func:`bench_cpu`); on a CUDA machine
with triton, :func:`bench_cuda` times the Triton kernels against SDPA's flash backend in bf16, forward
and forward+backward, with peak memory, and :func:`dit_frames_per_second` the DiT sampler.
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


def _cuda_peak(fn) -> int:
    """Peak CUDA bytes allocated by one call of ``fn`` above what was allocated before it."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def _fwd_bwd(attend, q, k, v):
    q.grad = k.grad = v.grad = None
    attend(q, k, v).sum().backward()


def _flash(q, k, v):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v)


def bench_cuda(layouts, d: int, budget: float, heads: int = 8, seed: int = 0, *, dtype=torch.bfloat16,
               repeats: int = 10, warmup: int = 3, reference_max_n: int = 16384) -> tuple[list[dict], dict]:
    """Monarch (Triton) vs ``scaled_dot_product_attention`` with the flash backend vs the Monarch torch
    reference, on CUDA in ``dtype``: forward and forward+backward time (interleaved,
    :func:`paperworks.bench.compare` with ``sync=torch.cuda.synchronize``) and peak memory per layout.

    Returns ``(rows, results)``: one metrics row per (layout, pass) and the ``BenchResult`` per
    ``(N, pass)``. Empty without CUDA or triton. The reference path is timed up to ``reference_max_n``
    tokens (its block-score tensors grow past a GPU's memory beyond that).
    """
    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        return [], {}
    from paperworks.bench import compare

    rows, results = [], {}
    g = torch.Generator(device="cuda").manual_seed(seed)
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        N = layout[0] * layout[1] * layout[2]
        knobs, ratio = monarch_for_budget(layout, d, budget)
        q, k, v = (torch.randn(1, heads, N, d, device="cuda", generator=g, dtype=dtype).requires_grad_()
                   for _ in range(3))
        attends = {"monarch": functools.partial(monarch_attention, layout=layout, **knobs),
                   "flash": _flash}
        if N <= reference_max_n:
            attends["reference"] = functools.partial(monarch_attention, layout=layout, backend="torch", **knobs)
        for kind in ("fwd", "fwd+bwd"):
            if kind == "fwd":
                cands = {n: functools.partial(torch.no_grad()(a), q, k, v) for n, a in attends.items()}
            else:
                cands = {n: functools.partial(_fwd_bwd, a, q, k, v) for n, a in attends.items()}
            peaks = {n: _cuda_peak(fn) for n, fn in cands.items()}
            res = compare(cands, repeats=int(repeats), warmup=int(warmup), threads=None, sync=torch.cuda.synchronize)
            results[(N, kind)] = res
            sp = res.speedup("monarch", over="flash")
            log.info("cuda N=%d %s: flash %.4fs monarch %.4fs (%.2fx [%.2f, %.2f]); peak MiB %s", N, kind,
                     res.median("flash"), res.median("monarch"), sp.value, sp.lower, sp.upper,
                     {n: round(b / 2 ** 20, 1) for n, b in peaks.items()})
            rows.append({"part": "bench_cuda", "device": torch.cuda.get_device_name(),
                         "dtype": str(dtype).split(".")[-1], "pass": kind, **dict(N=N, layout=str(layout), budget=budget, knobs=str(knobs), flop_ratio=ratio,
                             flash_s=res.median("flash"), monarch_s=res.median("monarch"),
                             reference_s=res.median("reference") if "reference" in cands else None,
                             speedup_vs_flash=sp.value, speedup_lo=sp.lower, speedup_hi=sp.upper,
                             repeats=res.repeats), **{f"{n}_peak_MiB": b / 2 ** 20 for n, b in peaks.items()}})
        if layout == tuple(int(x) for x in layouts[0]):   # accuracy in dtype against the fp32 reference
            with torch.no_grad():
                out = monarch_attention(q, k, v, layout, **knobs).float()
                ref = monarch_attention(q.float(), k.float(), v.float(), layout, backend="torch", **knobs)
            rows[-1]["max_abs_err_vs_fp32_reference"] = float((out - ref).abs().max())
    return rows, results


def dit_frames_per_second(frames: int, size: int, patch: int, dim: int, depth: int, heads: int, chunk_frames: int,
                          budget: float, *, steps: int = 4, batch: int = 1, repeats: int = 5, warmup: int = 1,
                          seed: int = 0) -> dict:
    """Frames per second of the DiT's chunked rollout (KV cache, ``steps`` Euler steps per chunk) on CUDA,
    Monarch (Triton) vs dense SDPA attention, an untrained model (speed does not depend on the weights)."""
    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        return {}
    from monarchrt.dit import AttentionOp, TinyVideoDiT, rollout
    from paperworks.bench import compare

    torch.manual_seed(seed)
    model = TinyVideoDiT(frames=frames, size=size, patch=patch, dim=dim, depth=depth, heads=heads).cuda().eval()
    layout = (frames, size // patch, size // patch)
    knobs, _ = monarch_for_budget(layout, dim // heads, budget)
    ops = {"monarch": AttentionOp("monarch", layout, chunk_frames, monarch_knobs=knobs),
           "dense": AttentionOp("dense", layout, chunk_frames)}
    context = torch.randn(batch, chunk_frames, size, size, device="cuda")
    with torch.no_grad():
        res = compare({n: functools.partial(rollout, model, context, op, chunk_frames, steps=steps)
                       for n, op in ops.items()}, repeats=int(repeats), warmup=int(warmup), threads=None,
                      sync=torch.cuda.synchronize)
    new = batch * (frames - chunk_frames)
    return {"frames": frames, "size": size, "tokens": layout[0] * layout[1] * layout[2],
            "monarch_fps": new / res.median("monarch"), "dense_fps": new / res.median("dense"),
            "speedup": res.speedup("monarch", over="dense")}


def flops_table(layouts, d: int, budget: float) -> list[dict]:
    out = []
    for layout in layouts:
        layout = tuple(int(x) for x in layout)
        knobs, _ = monarch_for_budget(layout, d, budget)
        plan = make_plan(layout, **knobs)
        out.append(dict(N=plan.N, monarch_flops=monarch_flops(plan, d), dense_flops=dense_flops(plan.N, d)))
    return out
