"""``tcgap experiment=bench``: γ̂_min against one TC-gap measurement with CE heads (class-IL + joint),
digits, random ReLU backbones of growing width; time (interleaved, :mod:`paperworks.bench`) and memory."""

from __future__ import annotations

import logging

from paperworks import Claim
from paperworks.bench import compare, peak_memory
from tcgap.backbones import RandomReLU
from tcgap.data import digits_splits, split_tasks
from tcgap.gap import tc_gap
from tcgap.learners import TaskHeadCE
from tcgap.margin import gamma_min

log = logging.getLogger(__name__)


def features(width, seed=0):
    """The bench's inputs: digits through RandomReLU(width); (gamma split, train tasks, test tasks, task_of)."""
    s = digits_splits(seed)
    bb = RandomReLU(width, seed=seed).fit(s["pretrain"][0])
    t = s["task_of_class"]
    return ((bb(s["gamma"][0]), s["gamma"][1]), split_tasks(bb(s["train"][0]), s["train"][1], t),
            split_tasks(bb(s["test"][0]), s["test"][1], t), t)


def measure_gamma(gamma_split, train, test, task_of, shrinkage="ledoit_wolf"):
    return gamma_min(*gamma_split, task_of, shrinkage=shrinkage)


def measure_gap(gamma_split, train, test, task_of, C=1.0, max_iter=200):
    return tc_gap(TaskHeadCE(C=C, n_steps=max_iter), train, test, reading="joint")


def run_bench(cfg) -> dict:
    bc = cfg.bench
    claims, checks, metrics, timings = [], [], [], {}
    for width in bc.widths:
        width = int(width)
        args = features(width)
        C, it = float(cfg.ce.C), int(cfg.ce.max_iter)
        sh = cfg.shrinkage
        res = compare({"gamma_min": lambda a=args, sh=sh: measure_gamma(*a, shrinkage=sh),
                       "tc_gap_ce": lambda a=args, C=C, it=it: measure_gap(*a, C=C, max_iter=it)},
                      repeats=int(bc.repeats), warmup=1, threads=1)
        sp = res.speedup("gamma_min", over="tc_gap_ce")
        claims.append(Claim.threshold(
            f"gamma_cheaper_w{width}", f"At width {width} γ̂_min (Ledoit–Wolf, Cholesky) is ≥ 10× cheaper than one "
            "TC-gap measurement with CE heads (5 task heads + the joint head, L-BFGS).",
            "wall-time ratio gap / γ̂ (median of paired ratios, interleaved)", sp, threshold=10.0, better="higher"))
        row = {"width": width, "speedup_median": sp.value, "speedup_lower": sp.lower, "speedup_upper": sp.upper}
        for r in res.rows():
            row[f"{r['candidate']}_wall_median_s"] = r["wall_median_s"]
            row[f"{r['candidate']}_cpu_median_s"] = r["cpu_median_s"]
        if bc.memory:
            mg = peak_memory(measure_gamma, setup=_FeatureSetup(width))
            mc = peak_memory(measure_gap, setup=_FeatureSetup(width))
            row.update(gamma_min_peak_mib=mg.mib, tc_gap_ce_peak_mib=mc.mib, memory_method=mg.method,
                       memory_ratio=mc.bytes / max(mg.bytes, 1.0))
        metrics.append(row)
        timings[f"w{width}_gamma_median_s"] = res.median("gamma_min")
        timings[f"w{width}_gap_median_s"] = res.median("tc_gap_ce")
        log.info("width %d: γ̂ %.4fs, gap %.3fs, ratio %.1f", width, res.median("gamma_min"), res.median("tc_gap_ce"),
                 sp.value)
    g = [m["speedup_median"] for m in metrics]
    checks.append(Claim.check("bench_ran_every_width", "Every width was timed.", "widths timed", len(g),
                              target=len(list(bc.widths)), tol=0))
    return {"claims": claims, "checks": checks, "metrics": metrics, "timings": timings}


class _FeatureSetup:
    """Picklable set-up for :func:`paperworks.bench.peak_memory` (builds the inputs in the child)."""

    def __init__(self, width):
        self.width = width

    def __call__(self):
        return features(self.width)
