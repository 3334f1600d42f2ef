"""The miniature's experiments: cold-start splits, baselines, the Top-K router and real-data transfer.

Protocol (one seed = one split draw and one ModelLens initialisation): training uses the *observed*
records of the training entities only; a held-out query (dataset, metric) is scored against the
full leaderboard's truth for its candidates:

- ``new_dataset``: held-out datasets, all models as candidates;
- ``new_model``: every dataset, the held-out models as candidates;
- ``new_pair`` (headline): held-out datasets, held-out models as candidates (neither seen);
- ``completion``: every dataset, the models whose cell is not in training as candidates.

Per seed the metrics are averaged over queries; claims compare methods paired over seeds.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from modellens.baselines import MatrixFactorisation, NeighbourRanker, Popularity, RandomRanker, run_each_candidate
from modellens.lens import VIEWS, ModelLens
from modellens.metrics import ranking_metrics
from modellens.records import cold_start_split, higher_is_better

log = logging.getLogger("modellens")

PRIMARY = {"classification": "accuracy", "regression": "r2"}


def oriented_truth(full: pd.DataFrame) -> dict:
    """``{(dataset, metric): Series(model → oriented score)}`` from the full leaderboard."""
    out = {}
    for (d, m), g in full.groupby(["dataset", "metric"]):
        sign = 1.0 if higher_is_better(m) else -1.0
        out[d, m] = pd.Series(sign * g["score"].to_numpy(), index=g["model"].to_numpy())
    return out


def queries(mode, split, truth, all_models) -> list[tuple[str, str, list[str]]]:
    """``(dataset, metric, candidates)`` of a split (see the module docstring)."""
    out = []
    if mode in ("new_dataset", "new_pair"):
        for (d, m), s in truth.items():
            if d in split.datasets:
                cands = list(s.index) if mode == "new_dataset" else [c for c in split.models if c in s.index]
                out.append((d, m, cands))
    elif mode == "new_model":
        for (d, m), s in truth.items():
            out.append((d, m, [c for c in split.models if c in s.index]))
    else:  # completion: candidates not seen on d in training
        seen = split.train.groupby("dataset")["model"].agg(set).to_dict()
        for (d, m), s in truth.items():
            if d in seen:
                out.append((d, m, [c for c in s.index if c not in seen[d]]))
    return [q for q in out if len(q[2]) >= 2]


def evaluate(ranker, qs, truth, k: int) -> dict[str, float]:
    """Mean ranking metrics of ``ranker.predict`` over queries."""
    rows = [ranking_metrics(truth[d, m][c].to_numpy(), ranker.predict(c, d, m), k=k) for d, m, c in qs]
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def _tune_knn(features, train, mm, dm, grid, seed):
    """Pick k_datasets on an inner new-dataset split of the training records (τ_w)."""
    inner = cold_start_split(train, "new_dataset", frac=0.2, random_state=seed + 1000)
    itruth = oriented_truth(inner.test)
    iq = [q for q in queries("new_dataset", inner, itruth, None)]
    best = max(grid, key=lambda kd: evaluate(NeighbourRanker(features, k_datasets=kd).fit(inner.train, mm, dm),
                                             iq, itruth, 5)["tau_w"])
    return best


def _tune_mf(train, grid, seed):
    inner = cold_start_split(train, "completion", frac=0.2, random_state=seed + 2000)
    itruth = oriented_truth(inner.test)
    seen = inner.train.groupby("dataset")["model"].agg(set).to_dict()
    iq = [(d, m, list(s.index)) for (d, m), s in itruth.items() if d in seen and len(s) >= 2]

    def score(p):
        return evaluate(MatrixFactorisation(rank=p[0], reg=p[1], seed=seed).fit(inner.train), iq, itruth, 5)["tau_w"]

    return max(grid, key=score)


def lens_of(cfg, seed, **over):
    kw = dict(dim=int(cfg.lens.dim), losses=tuple(cfg.lens.losses), id_dropout=float(cfg.lens.id_dropout),
              epochs=int(cfg.lens.epochs), lr=float(cfg.lens.lr), weight_decay=float(cfg.lens.weight_decay),
              text_dim=int(cfg.lens.text_dim), device=str(cfg.device), random_state=int(seed),
              early_stopping=bool(cfg.lens.get("early_stopping", True)))
    kw.update(over)
    return ModelLens(**kw)


def run_split(cfg, mode, seed, observed, full, truth, mm, dm, *, ablations=(), with_run_each=False):
    """All methods on one split draw; returns ``{method: metrics}``, the split and timing."""
    k = int(cfg.k)
    split = cold_start_split(observed, mode, frac=float(cfg.frac), random_state=seed)
    qs = queries(mode, split, truth, list(mm["model"]))
    out, times = {}, {}
    t0 = time.perf_counter()
    lens = lens_of(cfg, seed).fit(split.train, mm, dm)
    times["lens_fit_s"] = time.perf_counter() - t0
    out["modellens"] = evaluate(lens, qs, truth, k)
    out["popularity"] = evaluate(Popularity().fit(split.train, mm, dm), qs, truth, k)
    grid = list(cfg.baselines.knn_grid)
    for feats in ("meta", "text"):
        kd = _tune_knn(feats, split.train, mm, dm, grid, seed) if len(grid) > 1 else grid[0]
        out[f"knn_{feats}"] = evaluate(NeighbourRanker(feats, k_datasets=kd).fit(split.train, mm, dm), qs, truth, k)
        out[f"knn_{feats}"]["k_datasets"] = kd
    out["random"] = evaluate(RandomRanker(seed), qs, truth, k)
    if mode == "completion":
        mgrid = [tuple(p) for p in cfg.baselines.mf_grid]
        best = _tune_mf(split.train, mgrid, seed) if len(mgrid) > 1 else mgrid[0]
        out["mf"] = evaluate(MatrixFactorisation(rank=best[0], reg=best[1], seed=seed).fit(split.train), qs, truth, k)
        out["mf"]["rank"], out["mf"]["reg"] = best
    for name in ablations:
        over = ({"views": tuple(v for v in VIEWS if v != name[3:])} if name.startswith("no_")
                else {"losses": (name.replace("only_", ""),)})
        out[f"lens_{name}"] = evaluate(lens_of(cfg, seed, **over).fit(split.train, mm, dm), qs, truth, k)
    if with_run_each:
        out.update(run_each_scores(cfg, qs, truth, seed, times))
    return out, split, times, lens


class _Fixed:
    """A ranker from precomputed scores ``{(dataset, metric): {model: score}}``."""

    def __init__(self, table):
        self.table = table

    def predict(self, models, dataset, metric):
        t = self.table[dataset, metric]
        return np.array([t[m] for m in models], dtype=float)


def run_each_scores(cfg, qs, truth, seed, times) -> dict:
    """Run-each-candidate on 10% of each query dataset (one fit per (dataset, candidate)); LogME/LEEP/NCE."""
    k = int(cfg.k)
    by_d = {}
    for d, _, c in qs:
        by_d.setdefault(d, set()).update(c)
    proxy, trans = {}, {"logme": {}, "leep": {}, "nce": {}}
    spent = 0.0
    for d, cands in by_d.items():
        cands = sorted(cands)
        res = run_each_candidate(d, cands, frac=float(cfg.run_each.frac), seed=seed)
        spent += res["seconds"]
        for metric, arr in res["scores"].items():
            sign = 1.0 if higher_is_better(metric) else -1.0
            vals = np.where(np.isfinite(arr), sign * arr, -1e9)
            proxy[d, metric] = dict(zip(cands, vals))
        for key in trans:
            vals = res[key]
            for metric in res["scores"]:
                trans[key][d, metric] = dict(zip(cands, np.where(np.isfinite(vals), vals, -1e9)))
    times["run_each_s"] = spent
    out = {"run_each": evaluate(_Fixed(proxy), qs, truth, k)}
    for key in trans:
        usable = [q for q in qs if np.isfinite(list(trans[key][q[0], q[1]].values())).all()
                  and max(trans[key][q[0], q[1]].values()) > -1e8]
        if usable:
            out[key] = evaluate(_Fixed(trans[key]), usable, truth, k)
    out["run_each"]["seconds_per_dataset"] = spent / max(len(by_d), 1)
    return out


# claim 2: routers on Top-K pools --------------------------------------------------------------------

def router_regret(pools: dict, proxy: dict, truth: dict) -> dict:
    """A router that validates each pool member (its 10% proxy score) and picks the best one.

    ``pools``: {dataset: [model, ...]}; ``proxy``/``truth``: {dataset: {model: oriented primary score}}.
    Returns mean regret (best truth over all models − truth of the pick) and fits spent per dataset.
    """
    reg, fits = [], []
    for d, pool in pools.items():
        pick = max(pool, key=lambda m: proxy[d][m])
        reg.append(max(truth[d].values()) - truth[d][pick])
        fits.append(len(pool))
    return {"regret": float(np.mean(reg)), "fits": float(np.mean(fits))}
