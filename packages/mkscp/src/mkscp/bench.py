"""The bench experiment: fit and scoring time vs n_fit (exact vs Nyström), baselines, volume-estimation cost.

Everything is timed with :func:`paperworks.bench.compare` (candidates interleaved, threads pinned, wall
and CPU time). The absolute target ("100k points in a few seconds") is judged on CPU time, and reported
as a ratio to named references scored on the same points in the same rounds (KDE-HPD and Mahalanobis).
"""

from __future__ import annotations

import logging
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from mkscp.baselines import KDEScore, MahalanobisScore, MMDScore
from mkscp.data import sample_residuals
from mkscp.mks import MKSScore
from mkscp.volume import region_volume
from paperworks import Claim
from paperworks.bench import compare

log = logging.getLogger(__name__)


def _fit(make, E):
    return make().fit(E)


def _sample_and_score(gen, score, m: int) -> None:
    score.nonconformity(gen(m).points)


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    b = cfg.bench
    reps, warmup, d, n_score = int(b.repeats), int(b.warmup), int(b.d), int(b.n_score)
    threads = cfg.get("threads")
    rng = np.random.default_rng(int(cfg.get("seed", 0)))
    P = sample_residuals("banana", n_score, d, rng)
    n_claim = int(b.n_fit_claim)
    n_fits = sorted({int(v) for v in b.n_fits} | {n_claim})
    n_big, m = max(n_fits), int(b.nystrom_components)
    rows, fits, claims, extra_ratios = [], {}, [], {}

    # fit time, exact vs Nyström, at each n_fit (a fit of tens of seconds needs no warm-up round)
    for n in n_fits:
        E = sample_residuals("banana", n, d, rng)
        cands = {"exact": partial(_fit, MKSScore, E)}
        if m < n:
            cands["nystrom"] = partial(_fit, partial(MKSScore, n_components=m), E)
        res = compare(cands, repeats=reps, warmup=0, threads=threads)
        fits[n] = (E, res)
        for r in res.rows():
            rows.append({"what": "fit", "variant": r["candidate"], "n_fit": n, "d": d, **r})
        log.info("fit n_fit=%d: %s", n, ", ".join(f"{k} {res.median(k, 'cpu'):.2f}s cpu" for k in cands))

    # scoring n_score points: exact and Nyström at each n_fit; the baselines at the claim's n_fit
    for n in n_fits:
        E = fits[n][0]
        models = {"exact": MKSScore().fit(E)}
        if m < n:
            models["nystrom"] = MKSScore(n_components=m).fit(E)
        if n == n_claim:
            models.update({"mahalanobis": MahalanobisScore().fit(E), "kde": KDEScore().fit(E),
                           "mmd": MMDScore().fit(E)})
        res = compare({k: partial(s.nonconformity, P) for k, s in models.items()}, repeats=reps, warmup=warmup,
                      threads=threads)
        exact = models["exact"].nonconformity(P[:20000])
        for r in res.rows():
            row = {"what": "score", "variant": r["candidate"], "n_fit": n, "d": d, "n_score": n_score, **r}
            if r["candidate"] == "nystrom":
                row["rank"] = models["nystrom"].rank_
                row["spearman_vs_exact"] = float(spearmanr(models["nystrom"].nonconformity(P[:20000]), exact).statistic)
            elif r["candidate"] == "exact":
                row["rank"] = models["exact"].rank_
            rows.append(row)
        log.info("score n_fit=%d: %s", n, ", ".join(f"{k} {res.median(k, 'cpu'):.2f}s cpu" for k in models))
        if n == n_claim:
            t = res.time("exact", "cpu")
            ratios = {k: res.speedup(k, over="exact", kind="cpu") for k in ("mahalanobis", "kde", "mmd")}
            extra_ratios = {f"mks_cpu_over_{k}": v.to_dict() for k, v in ratios.items()}
            kde, maha = res.speedup("kde", over="exact", kind="cpu"), res.speedup("mahalanobis", over="exact", kind="cpu")
            claims.append(Claim.threshold(
                "scoring_100k_points", f"Scoring {n_score:,} test points with n_fit = {n_claim:,} takes a few seconds "
                "on 2 cores (read as <= 5 s).",
                f"MKS scoring CPU time (s), median over {reps} interleaved repeats, bootstrap 95% CI; "
                f"threads={res.threads}",
                t, threshold=5.0, better="lower",
                baselines={k: res.time(k, "cpu") for k in ("mahalanobis", "kde", "mmd")},
                notes=(f"d={d}. Relative to named references scored on the same points in the same rounds: "
                       f"{kde.value:.3g}× [{kde.lower:.3g}, {kde.upper:.3g}] the CPU time of KDE-HPD, "
                       f"{maha.value:.3g}× [{maha.lower:.3g}, {maha.upper:.3g}] that of Mahalanobis; "
                       f"wall time {res.median('exact'):.3g} s.")))

    # the Nyström claim: fit time at the largest n_fit, paired over interleaved repeats (log ratio)
    res_big = fits[n_big][1]
    if "nystrom" in res_big.cpu:
        claims.append(Claim.compare(
            "nystrom_scales", f"The Nyström option ({m} landmarks) fits faster than the exact score at "
            f"n_fit = {n_big:,}.", f"fit CPU time (s), {reps} interleaved repeats; paired log ratio",
            res_big.cpu["nystrom"], baseline="exact", baselines={"exact": res_big.cpu["exact"]}, better="lower",
            paired=True, scale="log",
            notes=f"median speed-up (CPU) {res_big.speedup('nystrom', over='exact', kind='cpu').value:.3g}×"))

    # volume-estimation cost: the public region_volume at its stated accuracy (auto) vs a fixed uniform budget
    for vd in sorted({d, int(b.get("volume_d", 6))}):
        r = np.random.default_rng([vd, 17])
        E, Ec = sample_residuals("banana", n_claim, vd, r), sample_residuals("banana", n_claim, vd, r)
        mks = MKSScore().fit(E)
        q = mks.calibrate(Ec, 0.1)
        npts = int(b.volume_points)
        cands = {"auto": partial(region_volume, mks, q, E, rtol=float(b.get("volume_rtol", 0.02)), random_state=1),
                 "ellipsoid_fixed": partial(region_volume, mks, q, E, method="ellipsoid", n_points=npts,
                                            max_points=npts, random_state=2)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = compare(cands, repeats=reps, warmup=0, threads=threads)
            info = {k: f() for k, f in cands.items()}
        for row in res.rows():
            e = info[row["candidate"]]
            rows.append({"what": "volume", "variant": row["candidate"], "d": vd, "n_fit": n_claim,
                         "n_points": e["n_points"], "rel_se": e["rel_se"], "stable": e["stable"],
                         "sampler": e["method"], **row})

    def plots(out_dir: Path) -> None:
        from mkscp.plot import plot_bench

        plot_bench(rows, Path(out_dir) / "bench_times.png")

    return {"claims": claims, "metrics": rows, "seeds": [int(cfg.get("seed", 0))], "plots": plots,
            "extra": {"bench_rows": rows, "scoring_cpu_ratios": extra_ratios}}
