"""``bench``: fit time on the mini-leaderboard and ranking latency against run-each-candidate."""

from __future__ import annotations

import logging

import numpy as np

from modellens.baselines import run_each_candidate
from modellens.experiments import PRIMARY, lens_of
from modellens.metrics import weighted_tau
from modellens.records import cold_start_split
from paperworks import Claim
from paperworks.bench import compare

log = logging.getLogger("modellens")


def run_bench(cfg, observed, full, truth, mm, dm, seed: int) -> tuple[list, list, list]:
    """Claims (fit < 60 s; ranking ≥ 1000× cheaper than run-each), rows and notes."""
    threads = cfg.get("threads") or 1
    fit = compare({"fit": lambda: lens_of(cfg, seed).fit(observed, mm, dm)}, repeats=int(cfg.bench.fit_repeats),
                  warmup=0, threads=threads)
    fit_t = fit.time("fit")
    claims = [Claim.threshold(
        "fit_under_60s", f"A full ModelLens fit on the mini-leaderboard ({len(observed)} observed records, "
        f"{int(cfg.lens.epochs)} epochs) takes under 60 s ({threads} thread(s)).", "fit wall time (s), median",
        fit_t, threshold=60.0, better="lower")]
    rows = [{"bench": "fit", **r} for r in fit.rows()]
    # ranking an unseen dataset's 40 candidates vs fitting each on 10% of it
    split = cold_start_split(observed, "new_dataset", frac=float(cfg.frac), random_state=seed)
    lens = lens_of(cfg, seed).fit(split.train, mm, dm)
    models = list(mm["model"])
    speed, taus_lens, taus_run = [], [], []
    for d in split.datasets[: int(cfg.bench.datasets)]:
        res = {}

        def run_each(d=d, res=res):
            res["r"] = run_each_candidate(d, models, frac=float(cfg.run_each.frac), seed=seed, transferability=False)

        b = compare({"rank": lambda d=d: lens.rank(d, models), "run_each": run_each}, repeats=int(cfg.bench.repeats),
                    warmup=1, threads=threads)
        sp = b.speedup("rank", over="run_each")
        speed.extend(sp.samples)
        metric = PRIMARY[res["r"]["task"]]
        t = truth[d, metric]
        taus_lens.append(weighted_tau(t[models].to_numpy(), lens.predict(models, d, metric)))
        taus_run.append(weighted_tau(t[models].to_numpy(), np.nan_to_num(res["r"]["scores"][metric], nan=-1e9)))
        rows += [{"bench": f"rank_vs_run_each:{d}", **r} for r in b.rows()]
        log.info("bench %s: ranking %.2e s, run-each %.2f s, speed-up %.0f×", d, b.median("rank"),
                 b.median("run_each"), sp.value)
    from paperworks import bootstrap_ci

    est = bootstrap_ci(np.asarray(speed), statistic=np.median, method="percentile")
    claims.append(Claim.threshold(
        "rank_1000x_cheaper", f"Ranking {len(models)} candidates for an unseen dataset is at least 1,000× cheaper in "
        "wall time than running each candidate on 10% of it (paired repeats, "
        f"{len(taus_lens)} held-out datasets).", "speed-up (median of paired time ratios)", est, threshold=1000.0,
        better="higher", baselines={"tau_w_modellens": float(np.mean(taus_lens)),
                                    "tau_w_run_each": float(np.mean(taus_run))},
        notes=f"τ_w on the primary metric: ModelLens {np.mean(taus_lens):.3f}, run-each {np.mean(taus_run):.3f}"))
    return claims, rows, {"tau_w_modellens": taus_lens, "tau_w_run_each": taus_run}
