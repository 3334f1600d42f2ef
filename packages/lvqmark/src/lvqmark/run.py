"""``run(cfg) -> dict``: the miniature's claims through the paperworks verdict rules, the checks, the bench."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from paperworks import Claim, seeds_of

log = logging.getLogger("lvqmark")

STABLE_SIGMA = 0.1   # a null shift below 0.1 σ is "stable" (fixed before any run: FPR 1 % → ~1.3 %)


def per_seed(att, rows, seeds, kind, fn, data="synthetic"):
    out = []
    for s in seeds:
        r = [a for a in att if a["seed"] == s and a["tokenizer"] == kind and a["data"] == data]
        out.append(fn(r) if r else float("nan"))
    return out


def summary(rows, seeds, kind, key, data="synthetic"):
    return [next((r[key] for r in rows if r["seed"] == s and r["tokenizer"] == kind and r["data"] == data),
                 float("nan")) for s in seeds]


def synthetic_claims(rows, att, seeds, cfg) -> list:
    L, G = "local", "global"
    worst_fpr = {k: per_seed(att, rows, seeds, k, lambda r: max(a["fpr"] for a in r)) for k in (L, G)}
    worst_shift = {k: per_seed(att, rows, seeds, k, lambda r: max(abs(a["null_shift"]) for a in r)) for k in (L, G)}
    bidir = {k: per_seed(att, rows, seeds, k, lambda r: min(max(a["null_shift"] for a in r),
                                                            -min(a["null_shift"] for a in r))) for k in (L, G)}
    worst_ks = {k: per_seed(att, rows, seeds, k, lambda r: max(a["ks"] for a in r)) for k in (L, G)}
    min_ks_p = per_seed(att, rows, seeds, L, lambda r: min(a["ks_p"] for a in r))
    worst_auc = {k: per_seed(att, rows, seeds, k, lambda r: min(a["auc"] for a in r)) for k in (L, G)}
    mild_tpr = per_seed(att, rows, seeds, L, lambda r: min(a["tpr"] for a in r if a["strength"] <= 0.05))
    n_att = len(cfg.attacks) * len(cfg.strengths)
    trained = {k: summary(rows, seeds, k, "recon_mse") for k in (L, G)}
    req_both = {f"both tokenizers reconstruct held-out series (MSE < {cfg.max_recon_mse} of unit variance; "
                f"local max {max(trained[L]):.3f}, global max {max(trained[G]):.3f})":
                max(trained[L] + trained[G]) < float(cfg.max_recon_mse)}
    tpr = summary(rows, seeds, L, "clean_tpr")
    req_wm = {f"the watermark is detectable on clean series (mean clean TPR at 1 % FPR ≥ 0.5; "
              f"{np.mean(tpr):.3f})": float(np.mean(tpr)) >= 0.5}
    grid = f"the {n_att} attacks of the grid ({', '.join(cfg.attacks)} at {', '.join(map(str, cfg.strengths))})"
    claims = [
        Claim.threshold(
            "global_null_drift_bidirectional", "Claim 1: with a globally coupled re-encoder (GlobalVQVAE + its "
            f"RobustEncoder), post-editing attacks shift the non-watermarked z both up and down: over {grid}, the "
            f"smaller of the largest upward and largest downward null-mean shift exceeds {STABLE_SIGMA} σ.",
            "min(max shift, −min shift) over attacks (clean-σ units)", bidir[G], threshold=STABLE_SIGMA,
            better="higher", requires=req_both, notes=f"local tokenizer: {np.mean(bidir[L]):.3f}"),
        Claim.threshold(
            "local_null_stable", f"Claim 2: with L-VQVAE's local re-encoding the null stays put: over {grid}, the "
            f"largest |null-mean shift| of non-watermarked z is below {STABLE_SIGMA} σ.",
            "max |null shift| over attacks (clean-σ units)", worst_shift[L], threshold=STABLE_SIGMA, better="lower",
            requires=req_both),
        Claim.compare(
            "local_null_shift_below_global", "Claim 2: the local tokenizer's worst null shift is smaller than the "
            "global tokenizer's (paired over seeds; same data, budget and watermark procedure).",
            "max |null shift| over attacks (clean-σ units)", worst_shift[L], baseline="global",
            baselines={"global": worst_shift[G]}, better="lower", paired=True, requires=req_both),
        Claim.compare(
            "local_ks_below_global", "Claim 2: attacked non-watermarked z stay closer in distribution to clean "
            "non-watermarked z with the local tokenizer: worst two-sample KS statistic over the grid, paired.",
            "max KS statistic (attacked vs clean NoWM z)", worst_ks[L], baseline="global",
            baselines={"global": worst_ks[G]}, better="lower", paired=True, bounds=(0, 1), requires=req_both),
        Claim.threshold(
            "local_attacked_null_passes_ks", "Trap test of the brief: for the local tokenizer, every attacked-NoWM z "
            f"sample passes a KS test against clean NoWM z (smallest p-value over the {n_att} attacks above "
            f"0.05/{n_att}, Bonferroni).", "min KS p-value over attacks", min_ks_p, threshold=0.05 / n_att,
            better="higher", bounds=(0, 1), requires=req_both),
        Claim.threshold(
            "local_worst_attacked_fpr_le_2pct", f"Performance: over {grid}, LVQMark's worst attacked-NoWM FPR at the "
            "clean-calibrated 1 % threshold is at most 2 %.", "worst attacked-NoWM FPR", worst_fpr[L],
            threshold=0.02, better="lower", bounds=(0, 1), requires=req_both,
            notes=f"global tokenizer: mean worst FPR {np.mean(worst_fpr[G]):.4f}"),
        Claim.threshold(
            "local_worst_fpr_half_of_global", "Performance: LVQMark's worst attacked-NoWM FPR is at most half the "
            "global tokenizer's worst in the same run (per seed: FPR_local − FPR_global/2 < 0).",
            "worst FPR_local − ½·worst FPR_global", [a - b / 2 for a, b in zip(worst_fpr[L], worst_fpr[G], strict=True)],
            threshold=0.0, better="lower", requires=req_both,
            notes=f"local {np.mean(worst_fpr[L]):.4f}, global {np.mean(worst_fpr[G]):.4f} (means over seeds)"),
        Claim.compare(
            "local_attacked_auc_beats_global", "Claim 4: detection power under attack is more stable with the local "
            "tokenizer: its worst AUC (attacked WM vs attacked NoWM) over the grid beats the global tokenizer's, paired.",
            "worst attacked AUC", worst_auc[L], baseline="global", baselines={"global": worst_auc[G]},
            better="higher", paired=True, bounds=(0, 1), requires={**req_both, **req_wm}),
        Claim.threshold(
            "local_mild_attack_tpr_ge_0.9", "Claim 4: at the mild strength (0.05) every attack leaves LVQMark's TPR "
            "at the clean 1 % threshold at or above 0.9.", "worst TPR at strength 0.05", mild_tpr, threshold=0.9,
            better="higher", bounds=(0, 1), requires=req_both),
        Claim.within(
            "wrong_key_fpr_is_nominal", "The wrong-key detector (same settings, key + 1) on watermarked series "
            "flags them at the nominal 1 % rate (within ±1 point).", "wrong-key FPR", summary(rows, seeds, L,
                                                                                            "wrong_key_fpr"),
            target=float(cfg.fpr), tol=0.01, bounds=(0, 1), requires=req_wm),
    ]
    if not cfg.quality.enabled:
        return claims
    for key, word, kw in (("disc", "discriminative score (|GRU accuracy − ½|)", dict(margin=-0.05, bounds=(0, 0.5))),
                          ("corr", "correlation error", dict(margin=-np.log(1.25), scale="log")),
                          ("pred", "predictive score (TSTR MAE)", dict(margin=-np.log(1.1), scale="log"))):
        tol = "0.05" if key == "disc" else "25 %" if key == "corr" else "10 %"
        how = ("δ tuned once per tokenizer on a separate draw by the MMD proxy only" if cfg.get("tune_delta")
               else f"δ fixed at {float(cfg.watermark.delta):g}")
        claims.append(Claim.compare(
            f"quality_{key}_noninferior", f"Claim 3: LVQMark keeps generation quality close to unwatermarked L-VQVAE: "
            f"the {word} of watermarked series is no worse than unwatermarked by more than {tol} (paired; "
            f"{how}).", word, summary(rows, seeds, L, f"{key}_wm"),
            baseline="nowm", baselines={"nowm": summary(rows, seeds, L, f"{key}_nowm")}, better="lower", paired=True,
            requires={**req_both, **req_wm}, **kw))
    return claims


def macro_claims(rows, att, seeds, cfg) -> list:
    wf = per_seed(att, rows, seeds, "local", lambda r: max(a["fpr"] for a in r), data="macrodata")
    wg = per_seed(att, rows, seeds, "global", lambda r: max(a["fpr"] for a in r), data="macrodata")
    mse = summary(rows, seeds, "local", "recon_mse", data="macrodata")
    return [Claim.threshold(
        "macrodata_local_worst_fpr_le_2pct", "Real-data check (statsmodels macrodata, 12 series, T = 24): LVQMark's "
        "worst attacked-NoWM FPR at the clean-calibrated 1 % threshold is at most 2 %.", "worst attacked-NoWM FPR",
        wf, threshold=0.02, better="lower", bounds=(0, 1),
        requires={f"the tokenizer reconstructs held-out windows (MSE < {cfg.max_recon_mse}; max {max(mse):.3f})":
                  max(mse) < float(cfg.max_recon_mse)},
        notes=f"global tokenizer: mean worst FPR {np.nanmean(wg):.4f}")]


def run(cfg, out_dir: Path | None = None) -> dict:
    from lvqmark.checks import construction_checks

    seeds = seeds_of(cfg)
    device = str(cfg.get("device", "cpu"))
    device = "cpu" if device == "auto" else device
    claims, checks, rows, att, arrays, mark = [], construction_checks(), [], [], {}, None
    if cfg.synthetic.enabled:
        from lvqmark.experiments import run_all

        rows, att, arrays, mark = run_all(cfg, seeds, device)
        if {"local", "global"} <= set(cfg.tokenizers):
            claims += synthetic_claims(rows, att, seeds, cfg)
        checks += run_checks(rows, cfg)
    if cfg.macrodata.enabled:
        from lvqmark.experiments import run_all

        mcfg = cfg.copy()
        mcfg.merge_with(cfg.macrodata.override)
        mseeds = seeds[: int(cfg.macrodata.seeds)]
        r2, a2, _, _ = run_all(mcfg, mseeds, device)
        rows += r2
        att += a2
        if {"local", "global"} <= set(cfg.tokenizers):
            claims += macro_claims(r2, a2, mseeds, mcfg)
    if cfg.bench.enabled:
        from lvqmark.bench import run_bench

        c, r = run_bench(cfg)
        claims += c
        rows += r
    if mark is not None and out_dir is not None:
        mark.save(Path(out_dir) / "lvqmark_model.pt")

    def plots(out_dir):
        if not arrays:
            return
        from lvqmark.plot import plot_fpr, plot_null_hists

        plot_null_hists(arrays, Path(out_dir) / "null_z_hist.png")
        plot_fpr([a for a in att if a["data"] == "synthetic"], int(cfg.n_eval), Path(out_dir) / "fpr_per_attack.png")

    metrics = rows + [{"kind": "attack", **a} for a in att]
    return {"claims": claims, "checks": checks, "metrics": metrics, "seeds": seeds, "plots": plots}


def run_checks(rows, cfg) -> list:
    """Run-level protocol properties: scoring never reuses a training draw."""
    overlap = sum(int(r["scored_equal_train"]) for r in rows)
    return [Claim.check("scored_series_disjoint_from_training", "No scored (generated, then attacked) series equals "
                        "a training window, the only inputs of the RobustEncoder's training (counted over every "
                        "seed and tokenizer).", "scored series equal to a training window", float(overlap),
                        target=0.0, tol=0.0)]
