"""``run(cfg) -> dict``: Exp A (objective level, exact), Exp B (digits geometry) or the bench."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch

from mcr2opt.ascent import (
    DivergenceError,
    ascend,
    linear_convergence,
    local_constants,
    loglog_slope,
    radial_directions,
)
from mcr2opt.baselines import logdet_value_and_grad, mcr2_value_and_grad, one_hot
from mcr2opt.maximizers import (
    closed_form_maximizer,
    critical_lam,
    distance_to_maximizers,
    hessian_spectrum,
    infer_ranks,
    manifold_dimension,
)
from mcr2opt.objective import mcr2, value_and_grad
from paperworks import Claim, binomial_ci, censored_summary, estimate, resolve_device, seeds_of

log = logging.getLogger("mcr2opt")


def _unit(shape, gen) -> torch.Tensor:
    D = torch.randn(shape, generator=gen, dtype=torch.float64)
    return D / D.norm()


# tuning ------------------------------------------------------------------------------------

def tune_steps(Zstar, y, cfg, seed: int) -> dict:
    """Each method's step from one grid, on a tuning start (seed not used for measurement):
    fewest steps to ‖∇F‖ ≤ g_tol from Z* + 0.1·u; failing that, the smallest final ‖∇F‖."""
    a = cfg.expA
    gen = torch.Generator().manual_seed(10_000 + seed)
    Z0 = Zstar + float(a.tune_radius) * _unit(Zstar.shape, gen)
    out = {}
    for method in list(a.methods) + (["pgd_sphere"] if a.pgd_sphere else []):
        scores = []
        start = Z0 if method != "pgd_sphere" else torch.randn(Zstar.shape, generator=gen, dtype=torch.float64)
        for step in a.step_grid:
            try:
                h = ascend(start, y, eps=float(cfg.eps), lam=float(a.lam), method=method, step=float(step),
                           n_steps=int(a.n_steps), momentum=float(a.momentum), track_distance=False,
                           stop_below=float(a.g_tol))
                reached = h["grad_norm"][-1] <= float(a.g_tol)
                score = (0, h["steps_run"]) if reached else (1, h["grad_norm"][-1])
            except DivergenceError:
                score = (2, math.inf)
            scores.append(score)
        best = min(range(len(scores)), key=lambda i: scores[i])
        out[method] = {"step": float(a.step_grid[best]), "interior": 0 < best < len(scores) - 1,
                       "scores": [list(s) for s in scores]}
        log.info("tuned %s: step %g (grid index %d of %d)", method, out[method]["step"], best, len(scores))
    return out


# Exp A -------------------------------------------------------------------------------------

def exp_a(cfg, seeds: list[int]) -> dict:
    a = cfg.expA
    eps, lam = float(cfg.eps), float(a.lam)
    sizes = [int(a.n_k)] * int(a.K)
    d = int(a.d)
    lam_c = critical_lam(int(a.n_k), sum(sizes), d, eps=eps)
    Zt, yt = closed_form_maximizer(sizes, d, eps=eps, lam=lam, generator=torch.Generator().manual_seed(99_999))
    tuned = tune_steps(Zt, yt, cfg, seeds[0])
    runs, consts, traces = [], [], {}
    checks_raw = {k: [] for k in ("grad_at_max", "rotated", "planted", "mcr2", "autograd", "min_gap", "hess_max",
                                  "nullity_excess", "ctrl_nullity_excess", "kappa_rel", "kappa_hessian")}
    for seed in seeds:
        gen = torch.Generator().manual_seed(seed)
        Zs, y = closed_form_maximizer(sizes, d, eps=eps, lam=lam, generator=gen)
        # identities at the maximizer
        F0, g0 = value_and_grad(Zs, y, eps=eps, lam=lam)
        checks_raw["grad_at_max"].append(float(g0.norm()))
        Q = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))[0]
        checks_raw["rotated"].append(distance_to_maximizers(Zs @ Q, y, eps=eps, lam=lam))
        R = radial_directions(Zs, y)[0]
        checks_raw["planted"].append(abs(distance_to_maximizers(Zs + 1e-3 * R, y, eps=eps, lam=lam) / 1e-3 - 1))
        Zr = torch.randn(Zs.shape, generator=gen, dtype=torch.float64)
        oh = one_hot(y, len(y), dtype=torch.float64)
        _, g_ours = value_and_grad(Zr, y, eps=eps, lam=lam)
        v_m, _ = mcr2_value_and_grad(Zr, oh, eps=eps)
        checks_raw["mcr2"].append(abs(float(mcr2(Zr, y, eps=eps)) - float(v_m)) / abs(float(v_m)))
        _, g_ad = logdet_value_and_grad(Zr, y, eps=eps, lam=lam)
        checks_raw["autograd"].append(float((g_ours - g_ad).norm() / g_ad.norm()))

        # local constants: the regularised maximizer and the degenerate control (λ = λ*)
        Zc, yc = closed_form_maximizer(sizes, d, eps=eps, lam=lam_c, generator=torch.Generator().manual_seed(seed))
        for kind, Zp, yp, lp in (("maximizer", Zs, y, lam), ("control", Zc, yc, lam_c)):
            rows = local_constants(Zp, yp, eps=eps, lam=lp, radii=list(a.kappa_radii), n_dirs=int(a.kappa_dirs),
                                   generator=torch.Generator().manual_seed(seed + 1))
            for r in rows:
                consts.append({"seed": seed, "kind": kind, **r})
            if kind == "maximizer":
                checks_raw["min_gap"].append(min(r["min_gap"] for r in rows))
            if a.hessian:   # second order: NSD, and nullity = dim 𝒳* (Morse–Bott) unless degenerate
                ev = hessian_spectrum(Zp, yp, eps=eps, lam=lp)
                scale = float(ev.abs().max())
                null = int((ev.abs() <= 1e-6 * scale).sum())
                excess = null - manifold_dimension(sizes, d, infer_ranks(Zp, yp, eps=eps, lam=lp))
                if kind == "maximizer":
                    kap_h = 1.0 / float(-ev[ev < -1e-6 * scale].max())
                    checks_raw["hess_max"].append(float(ev.max()) / scale)
                    checks_raw["nullity_excess"].append(excess)
                    checks_raw["kappa_hessian"].append(kap_h)
                    smallest = min(rows, key=lambda r: r["radius"])
                    checks_raw["kappa_rel"].append(abs(smallest["kappa"] / kap_h - 1))
                else:
                    checks_raw["ctrl_nullity_excess"].append(excess)

        # runs from perturbations of the maximizer
        for method in a.methods:
            for rad in a.radii_start:
                Z0 = Zs + float(rad) * _unit(Zs.shape, gen)
                runs.append(_one_run(Z0, y, eps, lam, method, tuned[method]["step"], cfg, seed,
                                     f"perturbed r={float(rad):g}", traces))
        # random starts (GD)
        for _ in range(int(a.random_starts)):
            Z0 = float(a.random_scale) * torch.randn(Zs.shape, generator=gen, dtype=torch.float64)
            runs.append(_one_run(Z0, y, eps, lam, "gd", tuned["gd"]["step"], cfg, seed, "random", traces,
                                 n_steps=int(a.random_steps)))
        # negative control: λ = λ*, start outside the degenerate critical set
        Rc = sum(radial_directions(Zc, yc))
        for _ in range(int(a.control_starts)):
            Z0 = Zc + float(a.control_radius) * (Rc / Rc.norm() + 0.1 * _unit(Zc.shape, gen))
            runs.append(_one_run(Z0, yc, eps, lam_c, "gd", tuned["gd"]["step"], cfg, seed, "control", traces,
                                 label="control"))
        # the sphere-constrained MCR² (rate on the Riemannian gradient norm)
        for _ in range(int(a.sphere_starts) if a.pgd_sphere else 0):
            Z0 = torch.randn(Zs.shape, generator=gen, dtype=torch.float64)
            runs.append(_one_run(Z0, y, eps, lam, "pgd_sphere", tuned["pgd_sphere"]["step"], cfg, seed,
                                 "sphere", traces))
    return {"runs": runs, "consts": consts, "tuned": tuned, "traces": traces, "checks_raw": checks_raw,
            "lam_c": lam_c}


def _one_run(Z0, y, eps, lam, method, step, cfg, seed, start, traces, *, n_steps=None, label=None) -> dict:
    a = cfg.expA
    label = label or method
    sphere = method == "pgd_sphere"
    row = {"seed": seed, "method": label, "start": start, "step": step}
    try:
        h = ascend(Z0, y, eps=eps, lam=lam, method=method, step=step, n_steps=int(n_steps or a.n_steps),
                   momentum=float(a.momentum), stop_below=float(a.floor))
    except DivergenceError as e:
        row.update(diverged=True, linear=False, note=str(e))
        return row
    series = h["grad_norm"] if sphere else h["dist"]
    lc = linear_convergence(series, window=int(a.window), floor=float(a.floor))
    row.update(diverged=False, on=("grad_norm" if sphere else "dist"), final=series[-1], **lc)
    if not sphere:
        row["ranks"] = "-".join(map(str, infer_ranks(h["Z"], y, eps=eps, lam=lam)))
    key = f"{label} ({start})"
    if key not in traces:   # the first seed's trace, for the plot
        traces[key] = series
    return row


# Exp B -------------------------------------------------------------------------------------

def exp_b(cfg, seeds: list[int]) -> dict:
    from mcr2opt.data import digits_splits
    from mcr2opt.network import evaluate, train

    b = cfg.expB
    device = resolve_device(str(cfg.get("device", "auto")))   # Exp A is float64 on the CPU (exact); Exp B trains here
    rows, cos = [], {}
    for seed in seeds:
        splits = digits_splits(seed)
        for loss in ("mcr2", "ce"):
            best = None
            for lr in b.lr_grid:   # the same grid, steps and selection rule for both losses
                model, info = train(splits, loss=loss, steps=int(b.steps), lr=float(lr), eps=float(cfg.eps),
                                    seed=seed, eval_every=int(b.eval_every), device=device)
                if best is None or info["val_acc"] > best[1]["val_acc"]:
                    best = (model, info, float(lr))
            model, info, lr = best
            ev = evaluate(model, splits, eps=float(cfg.eps), subspace_rank=int(b.subspace_rank))
            if seed == seeds[0]:
                cos[loss] = ev["cosines"]
            rows.append({"seed": seed, "loss": loss, "lr": lr, "best_step": info["best_step"],
                         "val_acc": info["val_acc"], **{k: v for k, v in ev.items() if k != "cosines"}})
            log.info("expB seed %d %s: probe %.3f ncm %.3f knn %.3f cos %.3f", seed, loss, ev["probe"], ev["ncm"],
                     ev["knn"], ev["mean_cosine"])
    return {"rows": rows, "cosines": cos}


# claims ------------------------------------------------------------------------------------

def _frac(rows) -> tuple:
    k = sum(bool(r.get("linear")) for r in rows)
    return binomial_ci(k, len(rows)) if rows else None


def claims_a(A: dict, cfg) -> tuple[list, list, list]:
    a = cfg.expA
    claims, checks, extra_rows = [], [], []
    consts = A["consts"]
    slopes = {}
    for kind in ("maximizer", "control"):
        for q in ("kappa", "pl", "qg"):
            vals = []
            for seed in sorted({c["seed"] for c in consts}):
                rs = [c for c in consts if c["seed"] == seed and c["kind"] == kind]
                vals.append(loglog_slope([c["radius"] for c in rs], [c[q] for c in rs]))
            slopes[(kind, q)] = vals
    radii = f"r ∈ [{min(a.kappa_radii):g}, {max(a.kappa_radii):g}]"
    setting = f"d={a.d}, K={a.K}, n_k={a.n_k}, λ={a.lam:g}, ε={cfg.eps:g}"
    claims.append(Claim.within(
        "error_bound", f"Error bound near the closed-form maximizers ({setting}): κ̂(r) = max dist/‖∇F‖ over "
        f"balls of radius r stays bounded as r shrinks (log-log slope of κ̂ on r within 0 ± 0.25, {radii}).",
        "slope of log κ̂ on log r", slopes[("maximizer", "kappa")], target=0.0, tol=0.25,
        baselines={"degenerate control (λ = λ*)": estimate(slopes[("control", "kappa")])},
        notes="κ̂ is sampled: random unit directions and each class's radial direction."))
    claims.append(Claim.threshold(
        "error_bound_control", "The estimator can fail: at the degenerate λ = λ* (a double root, growth of "
        "order dist³) κ̂ grows as r shrinks (slope ≤ −0.5).",
        "slope of log κ̂ on log r (control)", slopes[("control", "kappa")], threshold=-0.5, better="lower"))
    claims.append(Claim.within(
        "pl_inequality", f"PL near the maximizers: μ̂(r) = min ‖∇F‖²/(2(F*−F)) stays bounded away from 0 "
        f"(log-log slope within 0 ± 0.25, {radii}).",
        "slope of log μ̂ on log r", slopes[("maximizer", "pl")], target=0.0, tol=0.25,
        baselines={"degenerate control (λ = λ*)": estimate(slopes[("control", "pl")])}))
    claims.append(Claim.within(
        "quadratic_growth", f"Quadratic growth near the maximizers: ĉ(r) = min 2(F*−F)/dist² stays bounded away "
        f"from 0 (log-log slope within 0 ± 0.25, {radii}).",
        "slope of log ĉ on log r", slopes[("maximizer", "qg")], target=0.0, tol=0.25,
        baselines={"degenerate control (λ = λ*)": estimate(slopes[("control", "qg")])}))

    runs = A["runs"]
    crit = (f"reaches the float64 floor {a.floor:g} within {a.n_steps} steps, with contraction < 1 and R² > 0.95 "
            f"over the last {a.window} steps before it and a stable rate (late/early log-rate ≥ ½)")
    ctrl = [r for r in runs if r["method"] == "control"]
    for method in a.methods:
        rs = [r for r in runs if r["method"] == method and r["start"].startswith("perturbed")]
        rates = [r["rate"] for r in rs if not r.get("diverged") and r["rate"] == r["rate"]]
        tuned = A["tuned"][method]
        claims.append(Claim.threshold(
            f"linear_{method}", f"{method} (step {tuned['step']:g}, tuned on one grid) converges linearly in "
            f"distance to the closed-form set from perturbations of radius {min(a.radii_start):g}…"
            f"{max(a.radii_start):g} in most runs ({crit}).",
            "fraction of runs judged linear", _frac(rs), threshold=0.5, better="higher",
            baselines={"degenerate control (GD)": _frac(ctrl)},
            notes=(f"contraction factor {estimate(rates).value:.4f} [{estimate(rates).lower:.4f}, "
                   f"{estimate(rates).upper:.4f}]" if len(rates) > 1 else "no contraction factor")))
    rnd = [r for r in runs if r["start"] == "random"]
    claims.append(Claim.threshold(
        "linear_random_starts", "GD from random starts reaches a local maximizer of the closed-form set and "
        "converges linearly in distance there in most runs (same criterion).",
        "fraction of runs judged linear", _frac(rnd), threshold=0.5, better="higher"))
    sph = [r for r in runs if r["method"] == "pgd_sphere"]
    if sph:
        claims.append(Claim.threshold(
            "linear_pgd_sphere", "Projected GD on the sphere-constrained MCR² converges linearly (rate fitted on "
            "the Riemannian gradient norm: no closed-form set on the sphere) in most runs.",
            "fraction of runs judged linear", _frac(sph), threshold=0.5, better="higher"))
    claims.append(Claim.threshold(
        "control_sublinear", "The linear-convergence criterion rejects the degenerate control (λ = λ*, no error "
        "bound): GD there is judged linear in at most half the runs.",
        "fraction of control runs judged linear", _frac(ctrl), threshold=0.5, better="lower",
        notes="stability (late/early log-rate) " + ", ".join(f"{r.get('stability', math.nan):.2f}" for r in ctrl)))

    cr = A["checks_raw"]
    if cr["hess_max"]:
        checks.append(Claim.check(
            "hessian_nsd_at_maximizer", "The Hessian of F at the closed-form maximizers is negative semi-definite "
            "(largest eigenvalue over the largest |eigenvalue|, max over seeds).", "λ_max(H)/max|λ(H)|",
            max(cr["hess_max"]), threshold=1e-6, better="lower"))
        checks.append(Claim.check(
            "morse_bott_nullity", "The Hessian's nullity equals dim 𝒳* (the set is non-degenerate: the first-order "
            "form of the error bound); max over seeds of |nullity − dim 𝒳*|.", "|nullity − dim 𝒳*|",
            float(max(abs(v) for v in cr["nullity_excess"])), target=0.0, tol=0.0))
        checks.append(Claim.check(
            "control_degenerate", "At λ = λ* the Hessian's nullity exceeds dim 𝒳* (degenerate directions; min over "
            "seeds of nullity − dim).", "nullity − dim 𝒳*", float(min(cr["ctrl_nullity_excess"])),
            threshold=1.0, better="higher"))
        checks.append(Claim.check(
            "kappa_sampled_equals_hessian", "The sampled κ̂ at the smallest radius equals 1/λ_min⁺(−H), the "
            "first-order error-bound constant (relative difference, max over seeds): the sampled directions "
            "found the worst one.", "|κ̂ / κ_H − 1|", max(cr["kappa_rel"]), threshold=0.01, better="lower",
            notes=f"κ_H = {np.mean(cr['kappa_hessian']):.4g}"))
    checks.append(Claim.check("grad_zero_at_maximizer", "‖∇F‖ = 0 at the closed-form maximizers (max over seeds).",
                              "‖∇F(Z*)‖", max(cr["grad_at_max"]), threshold=1e-10, better="lower"))
    checks.append(Claim.check("no_ascent_near_maximizer", "No sampled perturbation of a maximizer increases F "
                              "(smallest F* − F over all radii and directions).",
                              "min F* − F", min(cr["min_gap"]), threshold=0.0, better="higher"))
    checks.append(Claim.check("rotated_distance_zero", "A rotated maximizer is at distance 0 (max over seeds).",
                              "dist(Z*Q, 𝒳*)", max(cr["rotated"]), threshold=1e-12, better="lower"))
    checks.append(Claim.check("planted_distance", "A planted radial perturbation of size 1e-3 is at distance 1e-3.",
                              "max |dist/1e-3 − 1|", max(cr["planted"]), threshold=1e-6, better="lower"))
    checks.append(Claim.check("value_equals_mcr2", "F (λ = 0, float64) equals PyPI mcr2's DeltaR (which "
                              "works in float32) to 1e-5 relative.",
                              "max relative difference", max(cr["mcr2"]), threshold=1e-5, better="lower"))
    checks.append(Claim.check("grad_equals_autograd", "The analytic gradient equals autograd through torch.logdet.",
                              "max relative difference", max(cr["autograd"]), threshold=1e-10, better="lower"))
    for m, t in A["tuned"].items():
        checks.append(Claim.check(f"step_grid_brackets_{m}", f"The tuned step of {m} ({t['step']:g}) is inside the grid.",
                                  "interior (1) or on the edge (0)", float(t["interior"]), target=1.0, tol=0.0))
    # steps to the floor, censored (a table, no claim)
    for method in [*a.methods, "control"]:
        rs = [r for r in runs if r["method"] == method]
        est = censored_summary([r["steps"] if r.get("reached_floor") else None for r in rs])
        extra_rows.append({"method": method, "steps_to_floor_median": est.value, "lower": est.lower,
                           "upper": est.upper, "n": est.n, "missed": est.n_censored})
    return claims, checks, extra_rows


def claims_b(B: dict) -> list:
    rows = B["rows"]
    m = [r for r in rows if r["loss"] == "mcr2"]
    c = [r for r in rows if r["loss"] == "ce"]
    out = [
        Claim.compare(
            "geometry_orthogonal", "MCR² features have more nearly orthogonal class subspaces than CE features "
            "(mean principal-angle cosine between rank-3 class subspaces, digits, MLP 64→128→32 on the sphere).",
            "mean principal-angle cosine", [r["mean_cosine"] for r in m], baseline="cross-entropy",
            baselines={"cross-entropy": [r["mean_cosine"] for r in c]}, better="lower", paired=True),
        Claim.compare(
            "accuracy_competitive", "MCR² features keep competitive accuracy: the linear probe on them is no worse "
            "than CE's own head by more than 2 points (test accuracy, same network, optimiser, steps and lr grid).",
            "test accuracy", [r["probe"] for r in m], baseline="cross-entropy (head)",
            baselines={"cross-entropy (head)": [r["head"] for r in c]}, better="higher", margin=-0.02,
            paired=True, bounds=(0, 1)),
    ]
    return out


def run(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    exp = cfg.experiment.name if "experiment" in cfg and "name" in cfg.experiment else "smoke"
    if cfg.get("bench", {}).get("enabled", False):
        from mcr2opt.bench import bench

        out = bench(cfg.bench, seeds, eps=float(cfg.eps))
        return {**out, "seeds": seeds, "extra": {"experiment": exp}}
    torch.set_default_dtype(torch.float32)
    claims, checks, metrics, extra = [], [], [], {}
    A = exp_a(cfg, seeds)
    ca, ka, steps_rows = claims_a(A, cfg)
    claims += ca
    checks += ka
    metrics += [{"table": "runs", **{k: v for k, v in r.items() if k != "note"}} for r in A["runs"]]
    metrics += [{"table": "constants", **r} for r in A["consts"]]
    extra.update(tuned=A["tuned"], steps_to_floor=steps_rows, lam_critical=A["lam_c"],
                 divergences=[r["note"] for r in A["runs"] if r.get("diverged")])
    B = None
    if cfg.expB.enabled:
        B = exp_b(cfg, seeds)
        claims += claims_b(B)
        metrics += [{"table": "expB", **r} for r in B["rows"]]
        extra["expB_means"] = {loss: {k: float(np.mean([r[k] for r in B["rows"] if r["loss"] == loss]))
                                      for k in ("ncm", "knn", "probe", "delta_r", "effective_rank", "rank90",
                                                "mean_cosine", "mean_max_cosine")}
                               for loss in ("mcr2", "ce")}
        extra["expB_means"]["ce"]["head"] = float(np.mean([r["head"] for r in B["rows"] if r["loss"] == "ce"]))

    def plots(out_dir):
        from mcr2opt.plot import plot_all

        plot_all(A, B, Path(out_dir))

    return {"claims": claims, "checks": checks, "metrics": metrics, "seeds": seeds, "extra": extra,
            "plots": plots}
