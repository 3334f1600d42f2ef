"""Bench: one training step (forward + backward + Adam) at growing patch counts, TMEvolve vs baselines.

Timing through ``paperworks.bench.compare`` (interleaved, threads pinned), peak memory through
``paperworks.bench.peak_memory`` (a fresh process per measurement).
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from paperworks import Claim
from paperworks.bench import compare, peak_memory
from tmevolve.baselines import BASELINES
from tmevolve.evolve import TMEvolve
from tmevolve.graph import patch_graph

log = logging.getLogger(__name__)


def _inputs(n, d, seed=0):
    side = int(np.ceil(np.sqrt(n)))
    ii, jj = np.divmod(np.arange(n), side)
    coords = np.stack([ii, jj], 1) * 256.0
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), patch_graph(coords)


def _model(name, d, h, r, t):
    if name == "tmevolve":
        return TMEvolve(d, h, 1, num_regions=r, num_steps=t, concepts=torch.randn(5, d))
    return BASELINES[name](d, h, 1)


def make_step(name, n, d, h, r, t):
    torch.manual_seed(0)
    x, ei = _inputs(n, d)
    model = _model(name, d, h, r, t)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    y = torch.ones(1, 1)

    def step():
        out, aux = model(x, ei)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(out, y) + aux.get("reg_loss", 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _memory_target(name, n, d, h, r, t):  # module level: picklable for the child process
    make_step(name, n, d, h, r, t)()


def run_bench(cfg) -> dict:
    b = cfg.bench
    d, h, r, t = int(b.in_channels), int(b.hidden), int(b.num_regions), int(b.num_steps)
    names = ["tmevolve", *b.time_baselines]
    rows, ratios, med, mem = [], {}, {}, {}
    for n in b.sizes:
        steps = {k: make_step(k, int(n), d, h, r, t) for k in names}
        res = compare(steps, repeats=int(b.repeats), warmup=1, threads=1)
        for k in names:
            med[(k, n)] = res.median(k)
            m = peak_memory(_memory_target, k, int(n), d, h, r, t)
            mem[(k, n)] = m.mib
            rows.append({"patches": int(n), "model": k, "wall_median_s": res.median(k), "cpu_median_s":
                         res.median(k, "cpu"), "peak_mib": m.mib})
            log.info("n=%6d %-10s step %.3fs peak %.0f MiB", n, k, res.median(k), m.mib)
        ratios[n] = res.speedup("patchgcn", over="tmevolve")  # = time(tmevolve) / time(patchgcn)
    n_max = max(b.sizes)
    sizes = np.array(list(b.sizes), float)
    tm = np.array([med[("tmevolve", n)] for n in b.sizes])
    r2 = float(np.corrcoef(sizes, tm)[0, 1] ** 2)
    slope, icpt = np.polyfit(sizes, tm, 1)
    claims = [
        Claim.threshold("bench_step_vs_patchgcn", f"At {n_max} patches a TMEvolve training step (T={t}, d={h}, R={r}) "
                        f"takes at most {b.max_ratio}× PatchGCN's.", "step-time ratio TMEvolve / PatchGCN",
                        ratios[n_max], threshold=float(b.max_ratio), better="lower"),
        Claim.threshold("bench_peak_memory", f"At {n_max} patches the step's peak memory is under "
                        f"{b.memory_limit_gib} GiB.", "peak memory (GiB), one measurement",
                        mem[("tmevolve", n_max)] / 1024, threshold=float(b.memory_limit_gib), better="lower",
                        exact=True, notes="a single peak-RSS measurement in a fresh process (exact as measured)"),
        Claim.threshold("bench_linear", "Step time is linear in patches: R² of a linear fit over the bench sizes "
                        "≥ 0.98.", "R² (time vs patches)", r2, threshold=0.98, better="higher", exact=True,
                        notes=f"fit: {slope * 1e3:.4f} ms/patch + {icpt * 1e3:.1f} ms; from medians of "
                              f"{b.repeats} interleaved steps"),
    ]
    extra = {"ratio_vs_patchgcn": {str(n): ratios[n].to_dict() for n in b.sizes}, "fit": {"slope_s_per_patch": slope,
             "intercept_s": icpt, "r2": r2}}
    return {"claims": claims, "metrics": rows, "extra": extra}
