"""The side studies of the paper experiment: identities, the split trap, convergence, macrodata, 2-D regions."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.distance import pdist
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mkscp.baselines import BonferroniScore, KDEScore, MahalanobisScore
from mkscp.data import macrodata_growth, make_regression, sample_residuals
from mkscp.experiment import shared_mc_points, spline_ridge
from mkscp.identities import gp_posterior_variance, mmd_minus_kpca
from mkscp.mks import MKSScore
from mkscp.volume import box_volume_stable, ellipsoid_volume_stable
from paperworks import binomial_ci, estimate


def identity_errors(cfg) -> dict:
    """Max relative errors of the MKS against sklearn's GP posterior variance and KernelPCA."""
    c = cfg.get("identities", {})
    n, seed = int(c.get("n_fit", 200)), int(c.get("seed", 0))
    rng = np.random.default_rng(seed)
    E = sample_residuals("banana", n, 3, rng)
    T = np.vstack([sample_residuals("banana", 200, 3, rng), 3.0 * rng.normal(size=(100, 3))])
    gp_err = 0.0
    for kernel in ("rbf", "matern"):
        s = MKSScore(kernel=kernel, rank_tol=0.0).fit(E)
        ref = gp_posterior_variance(E, T, kernel=kernel, lengthscale=s.lengthscale_, gamma=s.gamma_)
        gp_err = max(gp_err, float(np.max(np.abs(s.score_samples(T) - ref)) / np.max(np.abs(ref))))
    s = MKSScore(rank_tol=0.0).fit(E)
    ref = mmd_minus_kpca(E, T, lengthscale=s.lengthscale_, gamma=s.gamma_)["score"]
    kp_err = float(np.max(np.abs(s.score_samples(T) - ref)) / np.max(np.abs(ref)))
    return {"gp_max_rel_err": gp_err, "kpca_max_rel_err": kp_err, "n_fit": n}


def split_vs_same_set(cfg) -> dict:
    """The trap of the official code: fitting the score on the calibration residuals themselves.

    Proper split: fit on one sample, calibrate on another. Same set: fit and calibrate on one sample.
    Test coverage over ``reps`` repetitions (banana residuals, d=2).
    """
    c = cfg.get("split_check", {})
    reps, n, n_test = int(c.get("reps", 30)), int(c.get("n", 300)), int(c.get("n_test", 500))
    alpha, d = float(c.get("alpha", 0.1)), int(c.get("d", 2))
    rows = []
    for rep in range(reps):
        rng = np.random.default_rng([rep, 77])
        Ef, Ec, Et = (sample_residuals("banana", m, d, rng) for m in (n, n, n_test))
        good = MKSScore().fit(Ef)
        bad = MKSScore().fit(Ec)
        for variant, s in (("split", good), ("same_set", bad)):
            q = s.calibrate(Ec, alpha)
            cov = float(np.mean(s.score_samples(Et) <= q))
            rows.append({"study": "split_check", "rep": rep, "variant": variant, "alpha": alpha, "coverage": cov})
    summary = {"alpha": alpha, "n": n, "reps": reps}
    for variant in ("split", "same_set"):
        cv = [r["coverage"] for r in rows if r["variant"] == variant]
        summary[variant] = estimate(cv).to_dict()
        summary[variant + "_pooled"] = binomial_ci(int(round(sum(cv) * n_test)), reps * n_test).to_dict()
    return {"rows": rows, "summary": summary}


def _embedded(n, rng, A, noise):
    return sample_residuals("banana", n, 2, rng) @ A.T + noise * rng.normal(size=(n, A.shape[0]))


def convergence_study(cfg) -> dict:
    """Score error vs n_fit for 2-D banana residuals in d=2, embedded in d=6, and a full-rank 6-D banana.

    The kernel is the same RBF for all three (lengthscale: the median pairwise distance of the
    reference sample, without the d/2 factor) and gamma scales with n (``gamma_ref n / n_ref``), so
    only the ambient dimension and the effective rank differ. Error: relative RMS difference to a
    reference MKS fitted on ``n_ref`` points.
    """
    c = cfg.get("convergence", {})
    n_fits = [int(v) for v in c.get("n_fits", [100, 200, 400])]
    n_ref, n_eval, seeds = int(c.get("n_ref", 1600)), int(c.get("n_eval", 1000)), int(c.get("seeds", 3))
    rows, slopes = [], {"d2": [], "embedded6": [], "full6": []}
    for seed in range(seeds):
        rng = np.random.default_rng([seed, 2024])
        A = np.linalg.qr(rng.normal(size=(6, 2)))[0]
        gens = {"d2": lambda m, rng=rng: sample_residuals("banana", m, 2, rng),
                "embedded6": lambda m, rng=rng, A=A: _embedded(m, rng, A, 0.02),
                "full6": lambda m, rng=rng: sample_residuals("banana", m, 6, rng)}
        for case, gen in gens.items():
            R, T = gen(n_ref), gen(n_eval)
            ls = float(np.median(pdist(R[:1000])))
            ref = MKSScore(lengthscale=ls).fit(R)
            s_ref = ref.score_samples(T)
            errs = []
            for n in n_fits:
                s = MKSScore(lengthscale=ls, gamma=ref.gamma_ * n / n_ref).fit(gen(n))
                err = float(np.sqrt(np.mean((s.score_samples(T) - s_ref) ** 2) / np.mean(s_ref**2)))
                errs.append(err)
                rows.append({"study": "convergence", "case": case, "seed": seed, "n_fit": n, "rel_error": err,
                             "effective_dimension": s.effective_dimension()})
            slopes[case].append(float(np.polyfit(np.log(n_fits), np.log(errs), 1)[0]))
    gap = [a - b for a, b in zip(slopes["embedded6"], slopes["d2"])]
    gap_full = [a - b for a, b in zip(slopes["full6"], slopes["d2"])]
    summary = {k: estimate(v).to_dict() for k, v in slopes.items()}
    return {"rows": rows, "summary": summary, "slopes": slopes, "slope_gap": estimate(gap),
            "slope_gap_full": estimate(gap_full)}


def macrodata_demo(cfg) -> dict:
    """Joint 90% regions for next-quarter US growth (GDP, consumption, investment) from two lags.

    Random splits of the ~200 quarters into train / fit / calibration / test (40% / 20% / 20% / 20%);
    Ridge on standardised lags. Exchangeability is only approximate for a time series.
    """
    c = cfg.macrodata
    X, Y = macrodata_growth(lags=2)
    alpha, n_mc = float(c.get("alpha", 0.1)), int(c.get("n_mc", 20000))
    rows = []
    for seed in range(int(c.seeds)):
        rng = np.random.default_rng([seed, 5])
        p = rng.permutation(len(Y))
        n = len(Y)
        tr, fi, ca, te = np.split(p, [int(0.4 * n), int(0.6 * n), int(0.8 * n)])
        model = make_pipeline(StandardScaler(), Ridge(alpha=1.0)).fit(X[tr], Y[tr])
        res = {k: Y[v] - model.predict(X[v]) for k, v in (("fit", fi), ("cal", ca), ("test", te))}
        mks, maha = MKSScore().fit(res["fit"]), MahalanobisScore().fit(res["fit"])
        q, qm = mks.calibrate(res["cal"], alpha), maha.calibrate(res["cal"], alpha)
        pts, _ = shared_mc_points(res["fit"], res["cal"], {"mks": mks}, {"mks": {alpha: q}}, n_mc, rng)
        vol = pts.estimate(mks.score_samples(pts.points) <= q)["volume"] if mks.is_bounded(q) else math.inf
        rows.append({"study": "macrodata", "seed": seed, "alpha": alpha,
                     "coverage_mks": float(np.mean(mks.score_samples(res["test"]) <= q)),
                     "coverage_mahalanobis": float(np.mean(maha.score_samples(res["test"]) <= qm)),
                     "ratio_vs_mahalanobis": vol / float(maha.closed_form_volume(qm)[0])})
    fin = [math.log(r["ratio_vs_mahalanobis"]) for r in rows if np.isfinite(r["ratio_vs_mahalanobis"])]
    summary = {"n": int(len(Y)), "alpha": alpha, "seeds": int(c.seeds),
               "coverage_mks": estimate([r["coverage_mks"] for r in rows]).to_dict(),
               "coverage_mahalanobis": estimate([r["coverage_mahalanobis"] for r in rows]).to_dict(),
               "geomean_ratio": float(np.exp(np.mean(fin))) if fin else math.inf,
               "unbounded": int(len(rows) - len(fin))}
    return {"rows": rows, "summary": summary}


def region_grid(cfg, n_grid: int = 120, alpha: float = 0.1) -> list[dict]:
    """2-D regions (MKS, Mahalanobis, KDE-HPD, Bonferroni) on a grid, for banana and mixture residuals."""
    out = []
    n = int(cfg.n_fit)
    for kind in ("banana", "mixture"):
        rng = np.random.default_rng([0, 2, 99])
        X, Y = make_regression(kind, int(cfg.n_train) + 2 * n + 500, 2, rng)
        model = spline_ridge().fit(X[:int(cfg.n_train)], Y[:int(cfg.n_train)])
        E = Y[int(cfg.n_train):] - model.predict(X[int(cfg.n_train):])
        Ef, Ec, Et = E[:n], E[n:2 * n], E[2 * n:]
        lo, hi = np.quantile(E, 0.002, axis=0), np.quantile(E, 0.998, axis=0)
        pad = 0.25 * (hi - lo)
        gx, gy = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], n_grid),
                             np.linspace(lo[1] - pad[1], hi[1] + pad[1], n_grid))
        G = np.c_[gx.ravel(), gy.ravel()]
        panels = {}
        for name, s in (("MKS", MKSScore()), ("Mahalanobis", MahalanobisScore()), ("KDE-HPD", KDEScore()),
                        ("Bonferroni", BonferroniScore())):
            s.fit(Ef)
            q = s.calibrate(Ec, alpha)
            inside = s.contains(G, q).reshape(gx.shape)
            panels[name] = inside
        out.append({"residuals": kind, "gx": gx, "gy": gy, "panels": panels, "test": Et})
    return out


def volume_cross_check(cfg, alpha: float = 0.1) -> list[dict]:
    """MKS volume by growing-ellipsoid importance sampling vs bounding-box Monte Carlo (d = 2, 3)."""
    out = []
    n, n_points = int(cfg.n_fit), int(cfg.get("n_mc", 10000)) * 2
    for d in (2, 3):
        rng = np.random.default_rng([d, 31])
        Ef, Ec = sample_residuals("banana", n, d, rng), sample_residuals("banana", n, d, rng)
        s, m = MKSScore().fit(Ef), MahalanobisScore().fit(Ef)
        q = s.calibrate(Ec, alpha)
        ell = ellipsoid_volume_stable(s, q, m.location_, m.covariance_, 1.0, n_points=n_points, rng=rng)
        box = box_volume_stable(s, q, Ef.min(0), Ef.max(0), n_points=n_points, rng=rng)
        out.append({"d": d, "alpha": alpha, "ellipsoid": ell["volume"], "ellipsoid_se": ell["se"],
                    "ellipsoid_stable": ell["stable"], "ellipsoid_radii": [h[0] for h in ell["history"]],
                    "ellipsoid_history": [h[1] for h in ell["history"]],
                    "box": box["volume"], "box_se": box["se"], "box_stable": box["stable"],
                    "z": (ell["volume"] - box["volume"]) / max(math.hypot(ell["se"], box["se"]), 1e-300)})
    return out
