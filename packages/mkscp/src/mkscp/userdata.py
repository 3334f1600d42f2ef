"""Users' data sets through the CLI: ``mkscp experiment=data data.path=file.csv data.targets=[y1,y2]``.

The file is loaded by :func:`mkscp.data.load_table` (bad rows skipped and counted); each seed draws a
random train / fit / calibration / test split (``data.splits``), fits the regressor named by its
import path (``data.estimator``, any scikit-learn regressor; ``data.estimator_params``), and evaluates
every score of ``scores`` at every ``alphas`` exactly as the synthetic study does (the same
:func:`~mkscp.experiment.evaluate_split`, volumes from the public :func:`~mkscp.volume.region_volumes`).
"""

from __future__ import annotations

import importlib
import logging
import math
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.multioutput import MultiOutputRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mkscp.base import min_calibration_size
from mkscp.data import load_table
from mkscp.experiment import evaluate_split
from paperworks import Claim, estimate, seeds_of

log = logging.getLogger(__name__)
SPLITS = ("train", "fit", "cal", "test")


def make_estimator(path: str, params: dict | None = None):
    """An instance of the regressor class at import path ``path`` (e.g. ``sklearn.ensemble.RandomForestRegressor``)."""
    if not isinstance(path, str) or "." not in path:
        raise ValueError(f"data.estimator must be an import path such as 'sklearn.linear_model.Ridge', got {path!r}")
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"data.estimator: cannot import {path!r} ({err})") from None
    if not isinstance(cls, type) or not (hasattr(cls, "fit") and hasattr(cls, "predict")):
        raise TypeError(f"data.estimator: {path!r} is not a regressor class with fit/predict")
    return cls(**dict(params or {}))


def split_sizes(n: int, splits) -> dict:
    fr = {k: float(splits[k]) for k in SPLITS}
    if any(not 0.0 < v < 1.0 for v in fr.values()) or sum(fr.values()) > 1.0 + 1e-9:
        raise ValueError(f"data.splits must be fractions in (0, 1) summing to at most 1, got {fr}")
    sizes = {k: int(math.floor(n * fr[k])) for k in SPLITS}
    return sizes


def run_user_data(cfg, out_dir: Path | None = None) -> dict:
    dc = cfg.data
    X, Y, info = load_table(dc.path, targets=_plain(dc.get("targets")), features=_plain(dc.get("features")),
                            x_key=str(dc.get("x_key", "X")), y_key=str(dc.get("y_key", "Y")))
    if info["skipped"]:
        log.warning("%s: %d row(s) skipped (missing/non-numeric/NaN), first at lines %s", Path(dc.path).name,
                    info["skipped"], info["skipped_lines"])
    n, d = Y.shape
    sizes = split_sizes(n, dc.splits)
    alphas = [float(a) for a in cfg.alphas]
    level = min(alphas) / (d if "bonferroni" in cfg.scores else 1)  # the box calibrates each output at alpha / d
    need = min_calibration_size(level)
    if sizes["cal"] < need:
        raise ValueError(f"alpha={min(alphas)} needs at least {need} calibration points"
                         f"{' (bonferroni: alpha / d per output)' if level < min(alphas) else ''}; {n} rows x "
                         f"data.splits.cal={dc.splits.cal} gives {sizes['cal']} (raise the fraction or alpha, or "
                         "drop a score)")
    if sizes["fit"] <= d or sizes["train"] < 2 or sizes["test"] < 1:
        raise ValueError(f"too few rows ({n}) for d = {d} outputs with data.splits {dict(dc.splits)}: sizes {sizes}")
    base = make_estimator(str(dc.estimator), _plain(dc.get("estimator_params")) or {})
    if dc.get("multioutput", False):
        base = MultiOutputRegressor(base)
    if dc.get("scale_features", True):
        base = make_pipeline(StandardScaler(), base)
    seeds = seeds_of(cfg)
    knn = min(int(cfg.get("knn", 100)), sizes["fit"])
    rows = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 8])
        p = rng.permutation(n)
        cut = np.cumsum([sizes[k] for k in SPLITS])
        idx = dict(zip(SPLITS, np.split(p[:cut[-1]], cut[:-1])))
        model = clone(base).fit(X[idx["train"]], Y[idx["train"]] if d > 1 else Y[idx["train"], 0])
        rows += evaluate_split(model, *((X[idx[k]], Y[idx[k]]) for k in ("fit", "cal", "test")), cfg, rng,
                               {"dataset": Path(dc.path).name, "d": d, "seed": seed},
                               score_kw={"local_mahalanobis": {"n_neighbors": knn}})
        log.info("split %d done", seed)
    claims, checks = _claims(rows, seeds, alphas, list(cfg.scores), sizes)
    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds,
            "extra": {"data": {**info, "path": str(dc.path), "n": n, "d": d, "splits": sizes,
                               "estimator": str(dc.estimator)}, "ratio_table": _table(rows, alphas)}}


def _plain(v):
    from omegaconf import OmegaConf

    return OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v


def _per_seed_ratio(rows, seeds, score):
    out = []
    for s in seeds:
        v = [r["ratio_vs_mahalanobis"] for r in rows if r["seed"] == s and r["score"] == score]
        out.append(math.exp(float(np.mean(np.log(v)))) if v and all(np.isfinite(v)) and min(v) > 0 else math.inf)
    return out


def _ratio(values):
    return estimate(values, scale="log") if values and all(math.isfinite(v) for v in values) else math.inf


def _claims(rows, seeds, alphas, scores, sizes):
    mks = [r for r in rows if r["score"] == "mks"]
    claims = []
    if "mks" in scores and "mahalanobis" in scores:
        claims.append(Claim.threshold(
            "volume_vs_mahalanobis", "On this data set the MKS region is smaller than the Mahalanobis ellipsoid "
            "(the paper: 'significantly smaller' volume at nominal coverage).",
            "volume ratio MKS / Mahalanobis (per random split: geometric mean over the alphas; geometric mean over "
            "splits, log-scale t-CI)", _ratio(_per_seed_ratio(rows, seeds, "mks")), threshold=1.0, better="lower",
            baselines={s: _ratio(_per_seed_ratio(rows, seeds, s)) for s in scores if s not in ("mks", "mahalanobis")},
            requires={"every MKS region bounded": all(r["bounded"] for r in mks),
                      "every Monte-Carlo volume stable": all(r["volume_stable"] for r in rows if r["mc_points"])},
            notes=f"splits {sizes}; {len(seeds)} random splits"))
    checks = []
    for a in alphas:
        c = [r["coverage"] for r in mks if r["alpha"] == a]
        if len(c) >= 2:
            checks.append(Claim.check(
                f"coverage_alpha_{a:g}", f"Split-conformal marginal coverage of the MKS region is 1 - alpha = {1 - a:g} "
                "(within ±0.02).", f"mean test coverage over random splits (alpha = {a:g}), 95% t-CI",
                estimate(c, bounds=(0, 1)), target=1 - a, tol=0.02, exact=False))
    return claims, checks


def _table(rows, alphas):
    out = []
    for a in alphas:
        for s in dict.fromkeys(r["score"] for r in rows):
            rs = [r for r in rows if r["score"] == s and r["alpha"] == a]
            v = np.array([r["ratio_vs_mahalanobis"] for r in rs])
            out.append({"alpha": a, "score": s, "coverage": float(np.mean([r["coverage"] for r in rs])),
                        "ratio": float(np.exp(np.mean(np.log(v)))) if np.all(np.isfinite(v)) else math.inf,
                        "volume": float(np.exp(np.mean(np.log([r["volume"] for r in rs])))) if all(
                            np.isfinite([r["volume"] for r in rs])) else math.inf})
    return out
