"""``run(cfg) -> dict``: the experiments, pure and callable from tests and notebooks."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from modellens.baselines import NeighbourRanker, Popularity, RandomRanker, run_each_candidate
from modellens.data import REAL_DATASETS, dataset_meta, load_mini_leaderboard, model_meta
from modellens.experiments import PRIMARY, _tune_knn, evaluate, lens_of, oriented_truth, router_regret, run_split
from modellens.metrics import weighted_tau
from modellens.records import check_name_leakage, load_records
from paperworks import Claim, estimate, seeds_of

log = logging.getLogger("modellens")
METRICS = ("tau_w", "ndcg", "hit", "recall")


def load_data(cfg):
    """``(observed, full, model_meta, dataset_meta, mini)``: the mini-leaderboard or a user's records."""
    path = cfg.data.get("path")
    if path:
        recs, report = load_records(path, return_report=True)
        if report["skipped"]:
            log.warning("data.path: skipped %d row(s) with a non-numeric score (lines %s)", report["skipped"],
                        report["lines"][:20])
        mm = pd.read_csv(cfg.data.model_meta) if cfg.data.get("model_meta") else None
        dm = pd.read_csv(cfg.data.dataset_meta) if cfg.data.get("dataset_meta") else None
        return recs, recs, mm, dm, False
    full = load_mini_leaderboard(observed_only=False)
    observed = full[full["observed"] == 1].drop(columns="observed").reset_index(drop=True)
    return observed, full.drop(columns="observed"), model_meta(), dataset_meta(), True


def _paired(id_, statement, metric, per_seed, method, baselines, *, better="higher", notes="", requires=None):
    vals = {b: per_seed[b] for b in baselines}
    if len(baselines) == 1:
        return Claim.compare(id_, statement, metric, per_seed[method], baseline=baselines[0], baselines=vals,
                             better=better, paired=True, notes=notes, requires=requires)
    return Claim.compare_all(id_, statement, metric, per_seed[method], baselines=vals, better=better, paired=True,
                             notes=notes, requires=requires)


def run(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    observed, full, mm, dm, mini = load_data(cfg)
    truth = oriented_truth(full)
    modes = list(cfg.modes)
    rows, claims, checks, timings = [], [], [], {}
    per = {mode: {} for mode in modes}   # mode → method → metric → [per seed]
    leak_pairs, crossings = 0, 0
    run_each_on = bool(cfg.run_each.enabled) and mini
    routers = {}
    t_lens = []
    for seed in seeds:
        for mode in modes:
            t0 = time.perf_counter()
            res, split, times, lens = run_split(cfg, mode, seed, observed, full, truth, mm, dm,
                                                ablations=list(cfg.ablations) if mode == cfg.ablation_mode else (),
                                                with_run_each=run_each_on and mode in ("new_pair", "new_dataset"))
            t_lens.append(times["lens_fit_s"])
            crossings += int(split.train["model"].isin(split.models).sum() + split.train["dataset"].isin(
                split.datasets).sum())
            try:
                check_name_leakage(list(mm["model"]) if mm is not None else observed["model"].unique(),
                                   split.datasets)
            except ValueError:
                leak_pairs += 1
            for meth, met in res.items():
                for key, v in met.items():
                    per[mode].setdefault(meth, {}).setdefault(key, []).append(v)
                rows.append({"seed": seed, "split": mode, "method": meth, **met, **times})
            log.info("seed %d %-11s τ_w: %s (%.0f s)", seed, mode,
                     ", ".join(f"{m} {r['tau_w']:.3f}" for m, r in res.items()), time.perf_counter() - t0)
            if mode == "new_dataset" and run_each_on and cfg.router.enabled:
                routers.setdefault("per_seed", []).append(_router(cfg, seed, split, lens, observed, mm, dm, truth))
    if t_lens:
        timings["lens_fit_mean_s"] = float(np.mean(t_lens))
    k = int(cfg.k)

    def tau(mode):
        return {m: v["tau_w"] for m, v in per[mode].items()}

    # claim 1: the headline, unseen models on unseen datasets
    if "new_pair" in modes:
        t = tau("new_pair")
        claims.append(_paired(
            "new_pair_beats_metadata", "On new models × new datasets, ModelLens ranks the unseen candidates better "
            "(weighted Kendall τ_w) than popularity/mean rank and the metadata-only and text-similarity kNN baselines.",
            "τ_w (new_pair)", t, "modellens", ["popularity", "knn_meta", "knn_text"]))
        for key, words in (("ndcg", "NDCG"), ("hit", "Hit"), ("recall", "Recall")):
            claims.append(_paired(
                f"new_pair_{key}_at_{k}", f"On new models × new datasets, ModelLens's {words}@{k} beats popularity and "
                "both kNN baselines.", f"{words}@{k} (new_pair)", {m: v[key] for m, v in per["new_pair"].items()},
                "modellens", ["popularity", "knn_meta", "knn_text"]))
        if "run_each" in t:
            claims.append(_paired(
                "new_pair_beats_run_each", "On new models × new datasets, ModelLens (no target compute) ranks better "
                "than running each candidate on 10% of the target.", "τ_w (new_pair)", t, "modellens", ["run_each"],
                notes=f"run-each spends {np.mean(per['new_pair']['run_each']['seconds_per_dataset']):.2f} s of fits per "
                      "dataset"))
    for mode in ("new_dataset", "new_model"):
        if mode in modes:
            t = tau(mode)
            claims.append(_paired(
                f"{mode}_beats_baselines", f"On the {mode} split ModelLens ranks better (τ_w) than popularity and "
                "both kNN baselines.", f"τ_w ({mode})", t, "modellens", ["popularity", "knn_meta", "knn_text"]))
    if "completion" in modes:
        t = tau("completion")
        claims.append(_paired(
            "completion_beats_mf", "On the completion split (held-out cells) ModelLens ranks better (τ_w) than "
            "matrix factorisation and popularity.", "τ_w (completion)", t, "modellens", ["mf", "popularity"]))
    # claim 2: Top-K pools for a router
    if routers:
        rs = routers["per_seed"]
        K = int(cfg.router.k)
        vals = {src: [r["regret"][src][K] for r in rs] for src in rs[0]["regret"]}
        reg_all = [r["regret"]["modellens"][max(r["regret"]["modellens"])] for r in rs]
        improve = 1 - np.mean(vals["modellens"]) / max(np.mean(vals["random"]), 1e-12)
        claims.append(_paired(
            "router_topk_pool", f"A router that validates only a Top-{K} pool (fits each member on 10% of the target "
            f"and picks the best) has lower regret to the best model with ModelLens's pool than with popularity's "
            f"or a random pool.", f"regret of the pick (primary metric, Top-{K})",
            vals, "modellens", ["popularity", "random"], better="lower",
            notes=f"relative improvement over the random pool {improve:.0%}; validating all "
                  f"{int(rs[0]['fits_all'])} candidates has regret {np.mean(reg_all):.4f}"))
        for r in rs:
            for src, by_k in r["regret"].items():
                for kk, v in by_k.items():
                    rows.append({"seed": r["seed"], "split": "router", "method": src, "pool_size": kk, "regret": v})
    # claim 3: generated → real
    if mini and cfg.real.enabled:
        real = _real_transfer(cfg, seeds, observed, full, truth, mm, dm)
        rows += real["rows"]
        claims.append(_paired(
            "real_transfer", "Trained on generated datasets only, ModelLens ranks the 40 models on the five bundled "
            "real datasets (iris, wine, breast_cancer, digits, diabetes) better (τ_w) than popularity and both kNN "
            "baselines.", "τ_w (real datasets)", real["tau"], "modellens", ["popularity", "knn_meta", "knn_text"],
            notes="seeds vary only ModelLens's initialisation and dropout; the baselines are deterministic"))
    if cfg.bench.enabled and mini:
        from modellens.bench import run_bench

        b_claims, b_rows, b_extra = run_bench(cfg, observed, full, truth, mm, dm, seeds[0])
        claims += b_claims
        rows += b_rows
        timings["bench_tau_w"] = float(np.mean(b_extra["tau_w_modellens"]))
    # checks
    checks.append(Claim.check("no_entity_crosses_split", "No held-out model or dataset has a training record "
                              "(all splits, all seeds).", "held-out records in train", crossings, threshold=0,
                              better="lower"))
    checks.append(Claim.check("no_name_leakage", "No model name contains a held-out dataset's name.",
                              "splits with a leaking name", leak_pairs, threshold=0, better="lower"))
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=40), rng.normal(size=40)
    from scipy.stats import weightedtau

    checks.append(Claim.check("tau_w_equals_scipy", "Our τ_w equals scipy.stats.weightedtau.", "|difference|",
                              abs(weighted_tau(a, b) - weightedtau(a, b).statistic), threshold=1e-12, better="lower"))
    if mini:
        lb = load_mini_leaderboard(observed_only=False)
        obs_frac = float(lb.groupby(["model", "dataset"])["observed"].max().mean())
        checks.append(Claim.check("observed_fraction", "About 30% of the leaderboard's (model, dataset) cells are "
                                  "observed (popularity-biased).", "observed fraction of cells", obs_frac,
                                  target=0.3, tol=0.05))
        ll = full[full["metric"] == "log_loss"]
        d0 = ll.groupby("dataset")["score"].idxmin()
        best_by_z = oriented_truth(ll)
        wrong = sum(best_by_z[d, "log_loss"].idxmax() != ll.loc[i, "model"] for d, i in d0.items())
        checks.append(Claim.check("log_loss_direction", "The lowest log-loss is the top-ranked truth on every "
                                  "dataset (metric direction).", "datasets where it is not", wrong, threshold=0,
                                  better="lower"))
    extra = {"summary": {mode: {m: {key: estimate(v).to_dict() for key, v in met.items() if key in METRICS}
                                for m, met in per[mode].items()} for mode in modes},
             "k": k, "n_records_observed": int(len(observed)), "n_records_full": int(len(full))}
    if cfg.get("save_model"):
        lens = lens_of(cfg, seeds[0]).fit(observed, mm, dm)
        extra["saved_model"] = str(lens.save(cfg.save_model))

    def plots(out_dir):
        from modellens.plot import plot_regret, plot_tau

        plot_tau(per, Path(out_dir) / "tau_w.png")
        if routers:
            plot_regret(routers["per_seed"], Path(out_dir) / "regret_vs_pool.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "timings": timings,
            "extra": extra, "plots": plots}


def _router(cfg, seed, split, lens, observed, mm, dm, truth):
    """Regret of a router over Top-K pools from each source, on the held-out datasets of a new_dataset split."""
    models = list(mm["model"])
    pool_sizes = sorted({min(int(p), len(models)) for p in cfg.router.pool_sizes} | {int(cfg.router.k)})
    pop = Popularity().fit(split.train, mm, dm)
    rnd = RandomRanker(seed + 7)
    proxy, tru = {}, {}
    for d in split.datasets:
        res = run_each_candidate(d, models, frac=float(cfg.run_each.frac), seed=seed, transferability=False)
        metric = PRIMARY[res["task"]]
        proxy[d] = dict(zip(models, np.nan_to_num(res["scores"][metric], nan=-1e9)))
        tru[d] = truth[d, metric].to_dict()
    regret = {}
    for src, ranker in (("modellens", lens), ("popularity", pop), ("random", rnd)):
        order = {d: ranker.rank(d, models) for d in split.datasets}
        regret[src] = {K: router_regret({d: o[:K] for d, o in order.items()}, proxy, tru)["regret"]
                       for K in pool_sizes}
    return {"seed": seed, "regret": regret, "fits_all": len(models)}


def _real_transfer(cfg, seeds, observed, full, truth, mm, dm):
    gen = observed[~observed["dataset"].isin(REAL_DATASETS)]
    k = int(cfg.k)
    qs = [(d, m, list(truth[d, m].index)) for (d, m) in truth if d in REAL_DATASETS]
    per = {}
    rows = []
    fixed = {"popularity": evaluate(Popularity().fit(gen, mm, dm), qs, truth, k)}
    for feats in ("meta", "text"):
        kd = _tune_knn(feats, gen, mm, dm, list(cfg.baselines.knn_grid), 0)
        fixed[f"knn_{feats}"] = evaluate(NeighbourRanker(feats, k_datasets=kd).fit(gen, mm, dm), qs, truth, k)
    for seed in seeds:
        res = {"modellens": evaluate(lens_of(cfg, seed).fit(gen, mm, dm), qs, truth, k), **fixed,
               "random": evaluate(RandomRanker(seed), qs, truth, k)}
        for meth, met in res.items():
            per.setdefault(meth, []).append(met["tau_w"])
            rows.append({"seed": seed, "split": "real", "method": meth, **met})
    return {"tau": per, "rows": rows}

