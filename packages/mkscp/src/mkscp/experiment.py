"""One cell of the synthetic study: a regressor, six scores, three alphas, coverage and volumes."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import SplineTransformer

from mkscp.base import UnboundedRegionWarning
from mkscp.conformal import make_score
from mkscp.data import RESIDUALS, make_regression
from mkscp.metrics import coverage, worst_slab_coverage
from mkscp.volume import region_volumes


def spline_ridge():
    """The regressor of the study: cubic splines on x, then Ridge (multi-output)."""
    return make_pipeline(SplineTransformer(n_knots=8, degree=3), Ridge(alpha=1e-3))


def score_params(name: str, cfg) -> dict:
    if name == "local_mahalanobis":
        return {"n_neighbors": int(cfg.get("knn", 100))}
    return {}


def run_cell(kind: str, d: int, seed: int, cfg) -> list[dict]:
    """All scores x alphas on one synthetic data set → metric rows."""
    if kind not in RESIDUALS:
        raise ValueError(f"residuals must be among {RESIDUALS}, got {kind!r}")
    rng = np.random.default_rng([seed, d, RESIDUALS.index(kind)])
    sizes = [int(cfg.n_train), int(cfg.n_fit), int(cfg.n_cal), int(cfg.n_test)]
    X, Y = make_regression(kind, sum(sizes), d, rng)
    cut = np.cumsum(sizes)[:-1]
    (Xt, Xf, Xc, Xs), (Yt, Yf, Yc, Ys) = np.split(X, cut), np.split(Y, cut)
    model = spline_ridge().fit(Xt, Yt)
    return evaluate_split(model, (Xf, Yf), (Xc, Yc), (Xs, Ys), cfg, rng, {"residuals": kind, "d": d, "seed": seed})


def evaluate_split(model, fit, cal, test, cfg, rng, meta: dict, *, score_kw: dict | None = None) -> list[dict]:
    """Every score of ``cfg.scores`` at every alpha around a fitted ``model``: coverage, WSC and volume rows.

    ``fit``, ``cal`` and ``test`` are ``(X, Y)`` pairs; ``meta`` is copied into each row; ``score_kw``
    overrides a score's keyword arguments by name.
    """
    Xf, Xc, Xs = fit[0], cal[0], test[0]
    Ef, Ec, Es = (Y - np.asarray(model.predict(X)).reshape(Y.shape) for X, Y in (fit, cal, test))
    alphas = [float(a) for a in cfg.alphas]
    scores, thresholds, fit_s = {}, {}, {}
    for name in cfg.scores:
        t0 = time.perf_counter()
        s = make_score(name, **{**score_params(name, cfg), **(score_kw or {}).get(name, {})}).fit(Ef, X=Xf)
        fit_s[name] = time.perf_counter() - t0
        scores[name] = s
        thresholds[name] = {a: s.calibrate(Ec, a, X=Xc) for a in alphas}
    # volumes: the public estimator (closed form where one exists, Monte Carlo on points shared by the scores)
    glob = {n: s for n, s in scores.items() if not s.local}
    n_mc = int(cfg.n_mc)
    vols = region_volumes(glob, {n: [thresholds[n][a] for a in alphas] for n in glob}, Ef,
                          method=str(cfg.get("mc_method", "auto")), n_points=n_mc,
                          max_points=int(cfg.get("mc_max_points", 8 * n_mc)), rtol=float(cfg.get("mc_rtol", 0.05)),
                          random_state=rng)
    test_scores = {n: s.nonconformity(Es, X=Xs) for n, s in scores.items()}
    wsc = bool(cfg.get("wsc_delta", 0.2)) and len(Xs) >= 20
    rows = []
    for name, s in scores.items():
        for i, a in enumerate(alphas):
            q = thresholds[name][a]
            inside = (np.all(test_scores[name] <= q, axis=1) if test_scores[name].ndim == 2
                      else test_scores[name] <= q)
            bounded = s.is_bounded(q)
            if name in vols:
                v = vols[name][i]
            elif bounded:
                v = {"volume": float(np.mean(s.closed_form_volume(q, Xs))), "se": 0.0, "rel_se": 0.0, "stable": True,
                     "truncated": False, "n_points": 0, "method": "closed_form"}
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UnboundedRegionWarning)
                    s._warn_if_unbounded(q)
                v = {"volume": math.inf, "se": 0.0, "rel_se": 0.0, "stable": True, "truncated": False, "n_points": 0,
                     "method": "unbounded"}
            rows.append({
                **meta, "alpha": a, "score": name,
                "coverage": coverage(inside),
                "wsc": worst_slab_coverage(Xs, inside, delta=float(cfg.get("wsc_delta", 0.2))) if wsc else math.nan,
                "volume": v["volume"], "volume_se": v["se"], "volume_rel_se": v["rel_se"],
                "volume_stable": v["stable"], "bounded": bounded, "mc_truncated": v["truncated"],
                "mc_method": v["method"], "mc_points": v["n_points"], "fit_s": fit_s[name],
            })
    ref = {(r["alpha"]): r["volume"] for r in rows if r["score"] == "mahalanobis"}
    for r in rows:
        r["ratio_vs_mahalanobis"] = r["volume"] / ref[r["alpha"]] if ref else math.nan
    return rows
