"""The side studies of the paper experiment: identities, the split trap, convergence, macrodata, 2-D regions."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.spatial.distance import pdist
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mkscp.base import UnboundedRegionWarning
from mkscp.baselines import BonferroniScore, KDEScore, MahalanobisScore
from mkscp.data import macrodata_growth, make_regression, sample_residuals
from mkscp.experiment import spline_ridge
from mkscp.identities import gp_posterior_variance, mmd_minus_kpca
from mkscp.mks import MKSScore
from mkscp.volume import region_volume
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
        gp_err = max(gp_err, float(np.max(np.abs(s.nonconformity(T) - ref)) / np.max(np.abs(ref))))
    s = MKSScore(rank_tol=0.0).fit(E)
    ref = mmd_minus_kpca(E, T, lengthscale=s.lengthscale_, gamma=s.gamma_)["score"]
    kp_err = float(np.max(np.abs(s.nonconformity(T) - ref)) / np.max(np.abs(ref)))
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
            cov = float(np.mean(s.nonconformity(Et) <= q))
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
            s_ref = ref.nonconformity(T)
            errs = []
            for n in n_fits:
                s = MKSScore(lengthscale=ls, gamma=ref.gamma_ * n / n_ref).fit(gen(n))
                err = float(np.sqrt(np.mean((s.nonconformity(T) - s_ref) ** 2) / np.mean(s_ref**2)))
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnboundedRegionWarning)
            vol = region_volume(mks, q, res["fit"], n_points=n_mc, rtol=0.05, random_state=rng)["volume"]
        rows.append({"study": "macrodata", "seed": seed, "alpha": alpha,
                     "coverage_mks": float(np.mean(mks.nonconformity(res["test"]) <= q)),
                     "coverage_mahalanobis": float(np.mean(maha.nonconformity(res["test"]) <= qm)),
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
    """MKS volume by the Monte-Carlo samplers of :func:`region_volume` against an independent reference.

    Banana residuals, d in ``volume_check.dims``. The reference is uniform sampling without importance
    weights: the bounding box for d <= 3, the grown Mahalanobis ellipsoid for d >= 4.
    """
    out = []
    c = cfg.get("volume_check", {})
    n, rtol = int(cfg.n_fit), float(c.get("rtol", 0.02))
    for d in c.get("dims", [2, 3, 4]):
        d = int(d)
        rng = np.random.default_rng([d, 31])
        Ef, Ec = sample_residuals("banana", n, d, rng), sample_residuals("banana", n, d, rng)
        s = MKSScore().fit(Ef)
        q = s.calibrate(Ec, alpha)
        ref = "box" if d <= 3 else "ellipsoid"
        methods = ["ellipsoid", "adaptive", "mixture", "box"] if d <= 3 else ["adaptive", "mixture", "ellipsoid"]
        row = {"d": d, "alpha": alpha, "reference": ref, "methods": methods}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for method in methods:
                est = region_volume(s, q, Ef, method=method, rtol=rtol, max_points=int(c.get("max_points", 400_000)),
                                    random_state=int(rng.integers(2**31)))
                row[method] = {k: est[k] for k in ("volume", "se", "rel_se", "stable", "n_points")}
        row["z"] = {m: (row[m]["volume"] - row[ref]["volume"]) / max(math.hypot(row[m]["se"], row[ref]["se"]), 1e-300)
                    for m in methods if m != ref}
        out.append(row)
    return out


def volume_spread(cfg) -> dict:
    """The spread of :func:`region_volume` across random states at d = 6 (MKS, banana residuals, alpha 0.1).

    ``method="auto"`` (the mixture sampler, to ``rtol``) beside the uniform ellipsoid capped at the
    same number of points the 0.1 API drew by default (100k): the coefficient of variation over
    ``seeds`` random states, and how often each one says ``stable``.
    """
    c = cfg.get("volume_spread", {})
    d, seeds, n = int(c.get("d", 6)), int(c.get("seeds", 10)), int(c.get("n_fit", cfg.n_fit))
    rng = np.random.default_rng([d, 606])
    Ef, Ec = sample_residuals("banana", n, d, rng), sample_residuals("banana", n, d, rng)
    s = MKSScore().fit(Ef)
    q = s.calibrate(Ec, 0.1)
    out = {"d": d, "n_fit": n, "alpha": 0.1, "seeds": seeds}
    emax = int(c.get("ellipsoid_max_points", 100_000))
    for label, kw in (("auto", {"method": "auto", "rtol": float(c.get("rtol", 0.02))}),
                      ("ellipsoid_100k", {"method": "ellipsoid", "rtol": 0.02, "n_points": min(20_000, emax),
                                          "max_points": emax})):
        ests = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for k in range(seeds):
                ests.append(region_volume(s, q, Ef, random_state=k, **kw))
        v = np.array([e["volume"] for e in ests])
        out[label] = {"volumes": v.tolist(), "cv": float(v.std(ddof=1) / v.mean()),
                      "range_over_mean": float((v.max() - v.min()) / v.mean()),
                      "rel_se_mean": float(np.mean([e["rel_se"] for e in ests])),
                      "stable": int(sum(e["stable"] for e in ests)),
                      "n_points_mean": float(np.mean([e["n_points"] for e in ests])), **kw}
    return out
