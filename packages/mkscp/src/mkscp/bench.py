"""The bench experiment: fit and scoring time vs n_fit (exact vs Nyström), baselines, volume-estimation cost."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from mkscp.baselines import KDEScore, MahalanobisScore, MMDScore
from mkscp.data import sample_residuals
from mkscp.mks import MKSScore
from mkscp.volume import box_points, ellipsoid_points, mixture_points
from paperworks import Claim, estimate

log = logging.getLogger(__name__)


_CPU: dict = {}


def _time(f, repeats: int):
    """Run ``f`` ``repeats`` times; the wall times (the CPU times of the last call go to ``_CPU['last']``)."""
    out, ts, cs = None, [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = f()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    _CPU["last"] = float(np.median(cs))
    return out, ts


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    b = cfg.bench
    reps, d, n_score = int(b.repeats), int(b.d), int(b.n_score)
    rng = np.random.default_rng(int(cfg.get("seed", 0)))
    P = sample_residuals("banana", n_score, d, rng)
    rows, fit_times, score_times = [], {}, {}
    for n in [int(v) for v in b.n_fits]:
        E = sample_residuals("banana", n, d, rng)
        exact = None
        for variant, make in (("exact", lambda: MKSScore()),
                              ("nystrom", lambda: MKSScore(n_components=int(b.nystrom_components)))):
            if variant == "nystrom" and int(b.nystrom_components) >= n:
                continue
            s, tf = _time(lambda make=make, E=E: make().fit(E), reps)
            sc, ts = _time(lambda s=s: s.score_samples(P), reps)
            fit_times[(variant, n)], score_times[(variant, n)] = tf, ts
            row = {"variant": variant, "n_fit": n, "d": d, "n_score": n_score, "fit_s": float(np.median(tf)),
                   "score_s": float(np.median(ts)), "score_cpu_s": _CPU["last"], "rank": s.rank_}
            if variant == "exact":
                exact = sc
            else:
                row["spearman_vs_exact"] = float(spearmanr(sc[:20000], exact[:20000]).statistic)
            rows.append(row)
            log.info("%s n_fit=%d fit %.2fs score %.2fs", variant, n, row["fit_s"], row["score_s"])
    # the baselines at the claim's n_fit
    n_claim = int(b.n_fit_claim)
    E = sample_residuals("banana", n_claim, d, rng)
    base_times = {}
    for name, make in (("mahalanobis", MahalanobisScore), ("kde", KDEScore), ("mmd", MMDScore)):
        s = make().fit(E)
        _, ts = _time(lambda s=s: s.score_samples(P), reps)
        base_times[name] = ts
        rows.append({"variant": f"baseline:{name}", "n_fit_baseline": n_claim, "n_score": n_score,
                     "score_s_baseline": float(np.median(ts)),
                     "mks_over_baseline": float(np.median(score_times[("exact", n_claim)]) / np.median(ts))})
    # volume-estimation cost
    mks = MKSScore().fit(E)
    maha = MahalanobisScore().fit(E)
    r = 1.2 * float(np.sqrt(maha.score_samples(E).max()))
    for n_points in [int(v) for v in b.volume_points]:
        for method, gen in (("box", lambda m: box_points(E.min(0) - 1, E.max(0) + 1, m, rng)),
                            ("ellipsoid", lambda m: ellipsoid_points(maha.location_, maha.covariance_, r, m, rng)),
                            ("mixture", lambda m: mixture_points(E, maha.location_, maha.covariance_, r, m, rng))):
            t0 = time.perf_counter()
            pts = gen(n_points)
            t1 = time.perf_counter()
            mks.score_samples(pts.points)
            t2 = time.perf_counter()
            rows.append({"variant": f"volume:{method}", "n_points": n_points, "sample_s": t1 - t0, "score_s": t2 - t1})
    n_big = max(int(v) for v in b.n_fits)
    claims = [
        Claim.threshold(
            "scoring_100k_points", f"Scoring {n_score:,} test points with n_fit = {n_claim:,} takes a few seconds "
            "on 2 cores (read as <= 5 s).", "MKS scoring wall time (s)", estimate(score_times[("exact", n_claim)]),
            threshold=5.0, better="lower",
            baselines={k: estimate(v) for k, v in base_times.items()},
            notes=f"d={d}; BLAS threads={cfg.get('blas_threads', 1)}; {reps} repeats."),
    ]
    if ("nystrom", n_big) in fit_times:
        claims.append(Claim.compare(
            "nystrom_scales", f"The Nyström option ({int(b.nystrom_components)} landmarks) fits faster than the "
            f"exact score at n_fit = {n_big:,}.", "fit wall time (s)", estimate(fit_times[("nystrom", n_big)]),
            baseline="exact", baselines={"exact": estimate(fit_times[("exact", n_big)])}, better="lower"))
    if out_dir is not None:
        try:
            from mkscp.plot import plot_bench
        except ImportError:
            log.warning("matplotlib is not installed: no plots")
        else:
            plot_bench(rows, Path(out_dir) / "bench_times.png")
    return {"claims": claims, "metrics": rows, "seeds": [int(cfg.get("seed", 0))],
            "extra": {"bench_rows": rows}}
