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
from mkscp.baselines import MahalanobisScore
from mkscp.conformal import make_score
from mkscp.data import RESIDUALS, make_regression
from mkscp.metrics import coverage, worst_slab_coverage
from mkscp.volume import ellipsoid_points, mixture_points

MC_SCORES = ("mks", "kde", "mmd")  # no closed-form volume: Monte Carlo on shared points


def spline_ridge():
    """The regressor of the study: cubic splines on x, then Ridge (multi-output)."""
    return make_pipeline(SplineTransformer(n_knots=8, degree=3), Ridge(alpha=1e-3))


def score_params(name: str, cfg) -> dict:
    if name == "local_mahalanobis":
        return {"n_neighbors": int(cfg.get("knn", 100))}
    return {}


def shared_mc_points(E_fit, E_cal, scores, thresholds, n_mc: int, rng, *, method: str = "auto", max_grow: int = 5):
    """The Monte-Carlo points shared by every score: uniform in an expanded Mahalanobis ellipsoid
    (``method="ellipsoid"``, the default for d <= 3) or mixture importance sampling (``"mixture"``, d >= 4).

    The ellipsoid radius starts at 1.2x the largest Mahalanobis radius of the fit and calibration
    residuals and grows by 1.4x while some region (at its largest threshold) reaches the outer shell.
    """
    maha = MahalanobisScore().fit(E_fit)
    d = E_fit.shape[1]
    method = ("ellipsoid" if d <= 3 else "mixture") if method == "auto" else method
    r = 1.2 * math.sqrt(float(np.max(maha.score_samples(np.vstack([E_fit, E_cal])))))
    for _ in range(max_grow):
        if method == "mixture":
            pts = mixture_points(E_fit, maha.location_, maha.covariance_, r, n_mc, rng)
        else:
            pts = ellipsoid_points(maha.location_, maha.covariance_, r, n_mc, rng)
        touching = False
        for name, s in scores.items():
            q = max(thresholds[name].values())
            if s.is_bounded(q) and np.any(s.contains(pts.points[pts.shell], q)):
                touching = True
        if not touching:
            return pts, False
        r *= 1.4
    return pts, True


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
    Ef, Ec, Es = Yf - model.predict(Xf), Yc - model.predict(Xc), Ys - model.predict(Xs)
    alphas = [float(a) for a in cfg.alphas]
    scores, thresholds, fit_s = {}, {}, {}
    for name in cfg.scores:
        t0 = time.perf_counter()
        s = make_score(name, **score_params(name, cfg)).fit(Ef, Xf)
        fit_s[name] = time.perf_counter() - t0
        scores[name] = s
        thresholds[name] = {a: s.calibrate(Ec, a, Xc) for a in alphas}
    mc = {n: scores[n] for n in MC_SCORES if n in scores}
    pts, truncated = shared_mc_points(Ef, Ec, mc, thresholds, int(cfg.n_mc), rng,
                                     method=str(cfg.get("mc_method", "auto")))
    mc_scores = {n: s.score_samples(pts.points) for n, s in mc.items()}
    test_scores = {n: s.score_samples(Es, Xs) for n, s in scores.items()}
    rows = []
    for name, s in scores.items():
        for a in alphas:
            q = thresholds[name][a]
            inside = (np.all(test_scores[name] <= q, axis=1) if test_scores[name].ndim == 2
                      else test_scores[name] <= q)
            bounded = s.is_bounded(q)
            if not bounded:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UnboundedRegionWarning)
                    s._warn_if_unbounded(q)
                vol, se = math.inf, 0.0
            elif name in mc:
                est = pts.estimate(mc_scores[name] <= q)
                vol, se = est["volume"], est["se"]
            else:
                vol, se = float(np.mean(s.closed_form_volume(q, Xs))), 0.0
            rows.append({
                "residuals": kind, "d": d, "seed": seed, "alpha": a, "score": name,
                "coverage": coverage(inside),
                "wsc": worst_slab_coverage(Xs, inside, delta=float(cfg.get("wsc_delta", 0.2))),
                "volume": vol, "volume_se": se, "bounded": bounded, "mc_truncated": truncated, "mc_method": pts.kind,
                "fit_s": fit_s[name],
            })
    # closed-form vs Monte-Carlo check of the Mahalanobis volume on the same points
    if "mahalanobis" in scores:
        for r in rows:
            if r["score"] == "mahalanobis":
                q = thresholds["mahalanobis"][r["alpha"]]
                r["volume_mc"] = pts.estimate(scores["mahalanobis"].score_samples(pts.points) <= q)["volume"]
    ref = {(r["alpha"]): r["volume"] for r in rows if r["score"] == "mahalanobis"}
    for r in rows:
        r["ratio_vs_mahalanobis"] = r["volume"] / ref[r["alpha"]] if ref else math.nan
    return rows
