"""``run(cfg) -> dict``: Exp A / B / C and the bench; claims through the paperworks verdict rules."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np

from paperworks import Claim, binomial_ci, seeds_of

log = logging.getLogger("malora")


def _by(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


# Exp A claims ----------------------------------------------------------------------------------------


def claims_a(rows, seeds) -> tuple[list, list]:
    claims, checks = [], []
    r0 = _by(rows, rho=0.0)
    tasks = sorted({r["task"] for r in r0})
    best_cos, rel_pt, rel_ft, inside, n_peaks = [], [], [], 0, 0
    for s in seeds:
        per_task = []
        e_pt, e_ft = [], []
        for t in tasks:
            rs = sorted(_by(r0, seed=s, task=t), key=lambda r: r["lam"])
            band = [r for r in rs if r["in_band"]]
            per_task.append(max(r["cos_svm"] for r in band) if band else float("nan"))
            e_pt += [abs(r["pt_margin"] - r["pt_closed_form"]) / r["pt_closed_form"] for r in band]
            e_ft += [abs(r["ft_margin"] - r["ft_closed_form"]) / r["ft_closed_form"] for r in band]
            k = int(np.argmax([r["cos_svm"] for r in rs]))
            n_peaks += 1
            inside += int(0 < k and rs[k]["in_band"] and k < len(rs) - 1)
        best_cos.append(float(np.mean(per_task)))
        rel_pt.append(max(e_pt) if e_pt else float("nan"))
        rel_ft.append(max(e_ft) if e_ft else float("nan"))
    claims.append(Claim.threshold(
        "svm_alignment_in_band", "Claim 1: inside the predicted λ band the trained adapter aligns with the hard-margin "
        "multiclass SVM on the FT data: cos(ΔW, W_svm) ≥ 0.99 (best λ in the band, mean over tasks; ρ = 0).",
        "cos(ΔW, W_svm)", best_cos, threshold=0.99, better="higher", bounds=(-1, 1)))
    claims.append(Claim.threshold(
        "alignment_peaks_at_intermediate_lambda", "Claim 1 (intermediate regime): the alignment cos(ΔW, W_svm) peaks "
        "at an interior λ of the grid inside the band, not at its smallest λ (share of seed×task runs, ρ = 0).",
        "share of runs with an interior peak", binomial_ci(inside, n_peaks), threshold=0.5, better="higher"))
    claims.append(Claim.within(
        "pt_margin_closed_form", "Claim 2: the trained normalised PT margin matches the derived closed form "
        "q₀/√(‖W₀‖² + s(λ)²) within 10% at every λ in the band (ρ = 0; worst relative error per seed).",
        "max relative error", rel_pt, target=0.0, tol=0.1))
    claims.append(Claim.within(
        "ft_margin_closed_form", "Claim 2: the trained normalised FT margin matches the derived closed form "
        "s(λ)γ̂/√(‖W₀‖² + s(λ)²) within 10% at every λ in the band (ρ = 0; worst relative error per seed).",
        "max relative error", rel_ft, target=0.0, tol=0.1))
    pos = []
    for s in seeds:
        rs = [r for r in _by(rows, seed=s) if r["rho"] > 0]
        pos.append(min(r["pt_margin"] for r in rs) if rs else float("nan"))
    if any(np.isfinite(pos)):
        claims.append(Claim.threshold(
            "pt_margin_never_zero", "Claim 2 (forgetting-resistance): the normalised PT margin stays > 0 at every λ of "
            "the grid under task overlap ρ > 0 (min over ρ, tasks and λ per seed).",
            "min PT normalised margin", pos, threshold=0.0, better="higher"))
    # identities of the derivation
    raw = [abs(r["pt_raw_margin"] - r["pt_raw_w0"]) / abs(r["pt_raw_w0"]) for r in r0]
    checks.append(Claim.check("pt_raw_margin_unchanged_rho0", "At ρ = 0 the adapter leaves W₀'s raw PT margin "
                              "unchanged (ΔW x = 0 on PT inputs).", "max relative change", max(raw),
                              threshold=1e-3, better="lower"))
    above = [r["delta_norm"] for r in rows if r["lam"] >= r["lam_max"]]
    if above:
        checks.append(Claim.check("adapter_zero_above_lambda_max", "For λ ≥ λ_max = ‖∇L(W₀)‖_op the adapter is zero.",
                                  "max ‖ΔW‖_F", max(above), threshold=1e-3, better="lower"))
    mono = []
    for s in seeds:
        for t in tasks:
            ft = [r["ft_margin"] for r in sorted(_by(r0, seed=s, task=t), key=lambda r: r["lam"])]
            mono.append(all(a >= b - 1e-6 for a, b in zip(ft, ft[1:])))
    checks.append(Claim.check("ft_margin_decreases_with_lambda", "The FT margin is non-increasing in λ (ρ = 0).",
                              "share of runs monotone", float(np.mean(mono)), target=1.0, tol=0.0))
    return claims, checks


# Exp B claims ----------------------------------------------------------------------------------------


def claims_b(rows, seeds, baselines, rho_hi: float) -> list:
    def vals(method, metric, **kw):
        return [_by(rows, seed=s, method=method, **kw)[0][metric] for s in seeds]

    claims = []
    diffs = sorted({r["difficulty"] for r in rows})
    hard_d = "spread" if "spread" in diffs else diffs[-1]
    hard = {"rho": rho_hi, "difficulty": hard_d}
    m = vals("malora", "test_min_margin", **hard)
    u = vals("uniform", "test_min_margin", **hard)
    claims.append(Claim.threshold(
        "union_margin_vs_uniform_1.2x", f"Performance: at ρ = {rho_hi:g}, difficulties {hard_d}, MaLoRA's test union "
        "min-margin is at least 1.2× uniform averaging's (per seed: m_MaLoRA − 1.2·m_uniform ≥ 0).",
        "m_MaLoRA − 1.2·m_uniform", [a - 1.2 * b for a, b in zip(m, u)], threshold=0.0, better="higher",
        baselines={"malora": float(np.mean(m)), "uniform": float(np.mean(u))}))
    if "task_arithmetic" in baselines:
        claims.append(Claim.compare(
            "union_margin_not_below_task_arithmetic", f"Performance: at ρ = {rho_hi:g}, difficulties {hard_d}, MaLoRA's test union "
            "min-margin is not below held-out-tuned task arithmetic's (non-inferiority margin 0.02, paired over seeds).",
            "test union min normalised margin", m, baseline="task_arithmetic",
            baselines={"task_arithmetic": vals("task_arithmetic", "test_min_margin", **hard)}, better="higher",
            margin=-0.02, paired=True))
    claims.append(Claim.compare_all(
        "union_margin_best", f"Claim 4: at ρ = {rho_hi:g}, difficulties {hard_d}, MaLoRA's test union min-margin beats every "
        "baseline (paired over seeds).", "test union min normalised margin", m,
        baselines={b: vals(b, "test_min_margin", **hard) for b in baselines}, better="higher", paired=True))
    claims.append(Claim.compare_all(
        "min_task_accuracy_best_theory", f"Claim 5 (theory regime): at ρ = {rho_hi:g}, difficulties {hard_d}, MaLoRA's test min-task "
        "accuracy beats every baseline (paired over seeds).", "test min-task accuracy",
        vals("malora", "test_min_acc", **hard),
        baselines={b: vals(b, "test_min_acc", **hard) for b in baselines}, better="higher", paired=True, bounds=(0, 1)))
    low = []
    for s in seeds:
        rs = [r for r in _by(rows, seed=s, method="malora") if r["rho"] <= 0.1]
        low.append(min(r["test_min_margin"] for r in rs) if rs else float("nan"))
    claims.append(Claim.threshold(
        "merged_margin_positive_low_overlap", "Claim 3: at ρ ≤ 0.1 the MaLoRA merge has a positive margin on every task "
        "(test union min-margin > 0; min over ρ ≤ 0.1 and difficulty settings per seed).",
        "test union min normalised margin", low, threshold=0.0, better="higher"))
    rhos = sorted({r["rho"] for r in rows})
    if "task_arithmetic" in baselines and len(rhos) > 1:
        def gap(rho):
            kw = {"rho": rho, "difficulty": hard_d}
            return [a - b for a, b in zip(vals("malora", "test_min_margin", **kw),
                                          vals("task_arithmetic", "test_min_margin", **kw))]
        claims.append(Claim.compare(
            "gap_grows_with_overlap", f"Exp B: MaLoRA's union-margin advantage over tuned task arithmetic is larger at "
            f"ρ = {rhos[-1]:g} than at ρ = {rhos[0]:g} (difficulties {hard_d}, paired over seeds).",
            "m_MaLoRA − m_TA", gap(rhos[-1]), baseline=f"rho={rhos[0]:g}", baselines={f"rho={rhos[0]:g}": gap(rhos[0])},
            better="higher", paired=True))
    return claims


def claims_c(rows, seeds, baselines, min_own: float) -> list:
    def vals(method, metric):
        return [_by(rows, seed=s, method=method)[0][metric] for s in seeds]

    own = min(r["own_min_acc"] for r in rows)
    return [Claim.compare_all(
        "min_task_accuracy_best_digits", "Claim 5 (real data, permuted digits): MaLoRA's test min-task accuracy after "
        "merging beats every baseline (paired over seeds).", "test min-task accuracy", vals("malora", "test_min_acc"),
        baselines={b: vals(b, "test_min_acc") for b in baselines}, better="higher", paired=True, bounds=(0, 1),
        requires={f"every own adapter (and the base) reaches test accuracy ≥ {min_own:g} (min {own:.3f})": own >= min_own})]


# bench -------------------------------------------------------------------------------------------------


def run_bench(cfg) -> tuple[list, list, list, dict]:
    import torch

    from malora import bench as bb
    from malora.peft_merge import _lora_modules
    from paperworks.bench import compare, peak_memory

    b = cfg.bench
    rows, claims, checks, extra = [], [], [], {}
    for T in b.adapters:
        pm, names, cal = bb.adapters_model(int(T), seed=int(cfg.seed))
        cands = {how: bb.timed_candidate(pm, names, cal, how, int(b.max_iter)) for how in ("malora", *bb.PEFT_MERGES)}
        res = compare(cands, repeats=int(b.repeats), warmup=1, threads=int(b.threads))
        for row in res.rows():
            rows.append({"exp": "bench", "T": int(T), **row})
        for how in bb.PEFT_MERGES:
            ratio = res.speedup(how, over="malora")  # time(malora) / time(how), paired per repeat
            rows.append({"exp": "bench", "T": int(T), "candidate": f"ratio_malora_over_{how}", "ratio": ratio.value,
                         "ratio_lower": ratio.lower, "ratio_upper": ratio.upper})
        if int(T) == max(b.adapters):
            claims.append(Claim.threshold(
                f"alpha_and_merge_T{T}_under_2s", f"Performance: MaLoRA's α + merge for T = {T} adapters on every linear "
                "layer of a tiny transformer takes under 2 s (median wall time, bootstrap CI).", "seconds",
                res.time("malora"), threshold=2.0, better="lower",
                notes=f"{b.threads} thread(s); ratios to PEFT's merges in metrics.csv"))
            if b.memory:
                for how in ("malora", "cat"):
                    mem = peak_memory(bb.memory_call, how, setup=functools.partial(bb._setup_memory, int(T)))
                    rows.append({"exp": "bench", "T": int(T), "candidate": f"memory_{how}", "peak_mib": mem.mib,
                                 "memory_method": mem.method})
            # identities: cat is exactly Σ α_t B_t A_t, linear is not (PEFT #1155)
            alpha = np.linspace(0.5, 1.5, len(names))
            pm.add_weighted_adapter(names, list(alpha), "cat_check", combination_type="cat")
            pm.add_weighted_adapter(names, list(alpha), "linear_check", combination_type="linear")
            err_cat, err_lin, scale = 0.0, 0.0, 0.0
            with torch.no_grad():
                for mod in _lora_modules(pm, "cat_check").values():
                    ref = sum(a * mod.get_delta_weight(n) for a, n in zip(alpha, names))
                    scale = max(scale, float(ref.abs().max()))
                    err_cat = max(err_cat, float((mod.get_delta_weight("cat_check") - ref).abs().max()))
                    err_lin = max(err_lin, float((mod.get_delta_weight("linear_check") - ref).abs().max()))
            checks.append(Claim.check("peft_cat_is_exact", "add_weighted_adapter(cat) equals Σ_t α_t B_tA_t.",
                                      "max abs error / max |ΔW|", err_cat / scale, threshold=1e-5, better="lower"))
            checks.append(Claim.check("peft_linear_is_not", "add_weighted_adapter(linear) differs from Σ_t α_t B_tA_t "
                                      "(PEFT #1155).", "max abs error / max |ΔW|", err_lin / scale, threshold=1e-3,
                                      better="higher"))
    # the theory regime's α alone: the bisection program for T = max(adapters) trained adapters
    from malora.data import theory_tasks
    from malora.lora import train_head, train_lora
    from malora.mixing import mixing_coefficients

    T = int(max(b.adapters))
    pt, fts = theory_tasks(int(cfg.seed), d=128, k=10, T=T, rho=0.1, n_classes=5, n=200, separations=[6.0] * T,
                           pt_separation=6.0, noise=0.5, n_test=10)
    W0 = train_head(pt.X, pt.y, 5)
    D = [train_lora(W0, f.X, f.y, rank=4, lam=1e-3)["delta"] for f in fts]
    cal = [(f.X_val, f.y_val) for f in fts]
    base = (pt.X_val, pt.y_val)
    res = compare({"alpha_linear": lambda: mixing_coefficients(W0, D, cal, base_data=base, method="program"),
                   "alpha_linear_homogeneous": lambda: mixing_coefficients(W0, D, cal, base_data=base, method="program",
                                                                           solver="homogeneous")},
                  repeats=int(b.repeats), warmup=1, threads=int(b.threads))
    rows += [{"exp": "bench", "T": T, **r} for r in res.rows()]
    claims.append(Claim.threshold(
        f"alpha_linear_T{T}_under_2s", f"Performance: MaLoRA's α for T = {T} adapters of a linear head (d = 128, "
        f"{T + 1} tasks × 200 calibration points, bisection program) takes under 2 s (median wall, bootstrap CI).",
        "seconds", res.time("alpha_linear"), threshold=2.0, better="lower",
        notes=f"{b.threads} thread(s); the same optimum as one cone program (solver='homogeneous') in metrics.csv"))
    return claims, checks, rows, extra


# run -----------------------------------------------------------------------------------------------------


def run(cfg, out_dir: Path | None = None) -> dict:
    from malora.experiments import exp_a, exp_b, exp_c

    seeds = seeds_of(cfg)
    claims, checks, rows = [], [], []
    if cfg.expA.enabled:
        ra = exp_a(cfg, seeds)
        rows += ra
        c, k = claims_a(ra, seeds)
        claims += c
        checks += k
    if cfg.expB.enabled:
        rb = exp_b(cfg, seeds)
        rows += rb
        claims += claims_b(rb, seeds, list(cfg.expB.baselines), max(float(r) for r in cfg.expB.rhos))
    if cfg.expC.enabled:
        rc = exp_c(cfg, seeds)
        rows += rc
        claims += claims_c(rc, seeds, list(cfg.expC.baselines), float(cfg.expC.min_own_accuracy))
    if cfg.bench.enabled:
        c, k, rbench, _ = run_bench(cfg)
        claims += c
        checks += k
        rows += rbench

    def plots(out_dir):
        from malora.plot import plot_lambda, plot_merging

        if cfg.expA.enabled:
            plot_lambda([r for r in rows if r.get("exp") == "A"], Path(out_dir) / "margins_vs_lambda.png")
        if cfg.expB.enabled:
            plot_merging([r for r in rows if r.get("exp") == "B"], Path(out_dir) / "merging_vs_rho.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "plots": plots}
