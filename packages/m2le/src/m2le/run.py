"""``run(cfg) -> dict``: the CL streams and the bench; claims through the paperworks verdict rules."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from paperworks import Claim, seeds_of

log = logging.getLogger("m2le")

BASELINES = ("seq", "average", "pm", "fisher", "ewc")


def _vals(rows, seeds, stream, method, metric):
    out = []
    for s in seeds:
        r = [x for x in rows if x["seed"] == s and x["stream"] == stream and x["method"] == method]
        out.append(r[0][metric] if r else float("nan"))
    return out


def stream_claims(rows, seeds, cfg) -> list:
    claims = []
    names = sorted({r["stream"] for r in rows})
    methods = set(cfg.methods)
    min_own = float(cfg.min_own_accuracy)
    for st in names:
        own = min(r["pre_merge_acc"] for r in rows if r["stream"] == st and "pre_merge_acc" in r)
        req = {f"every method's adapters learn their tasks (mean pre-merge test accuracy ≥ {min_own:g}; "
               f"min {own:.3f})": own >= min_own}
        if "m2le" in methods and set(BASELINES) <= methods:
            for metric, word in (("final_acc", "final accuracy"), ("aaa", "average anytime accuracy")):
                claims.append(Claim.compare_all(
                    f"m2le_beats_peft_cl_{st}_{metric}", f"Claim 4 ({st} stream): M²LE (HIM + TSP) has a higher {word} "
                    "than every PEFT-based CL baseline: Seq-LoRA, averaging (α = 1/t), P&M (α* + perturbation), "
                    "Fisher-weighted merging and EWC (paired over seeds).", word,
                    _vals(rows, seeds, st, "m2le", metric),
                    baselines={b: _vals(rows, seeds, st, b, metric) for b in BASELINES}, better="higher",
                    paired=True, bounds=(0, 1), requires=req,
                    notes=("joint upper bound: " + f"{np.mean(_vals(rows, seeds, st, 'joint', 'final_acc')):.3f}")
                    if "joint" in methods else ""))
        if {"fisher", "scalar"} <= methods:
            claims.append(Claim.compare(
                f"elementwise_beats_scalar_{st}", f"Claim 1 ({st} stream): element-wise modulation beats one shared "
                "scalar: Fisher/HIM merging (no TSP) has a higher final accuracy than P&M's α* alone (no "
                "perturbation), paired over seeds.", "final accuracy", _vals(rows, seeds, st, "fisher", "final_acc"),
                baseline="scalar", baselines={"scalar": _vals(rows, seeds, st, "scalar", "final_acc")},
                better="higher", paired=True, bounds=(0, 1), requires=req))
        if {"fisher", "m2le"} <= methods:
            claims.append(Claim.compare(
                f"tsp_improves_him_{st}", f"Claim 3 ({st} stream): TSP stabilises the update under merging: HIM + TSP "
                "(M²LE) has a higher final accuracy than the same merge without TSP (= Fisher-weighted merging); "
                "this is also the HIM–Fisher-merge gap (paired over seeds).", "final accuracy",
                _vals(rows, seeds, st, "m2le", "final_acc"), baseline="fisher",
                baselines={"fisher": _vals(rows, seeds, st, "fisher", "final_acc")}, better="higher", paired=True,
                bounds=(0, 1), requires=req))
            claims.append(Claim.compare(
                f"tsp_reduces_merge_drop_{st}", f"Claim 3 ({st} stream): with TSP the merge costs the task just "
                "learned less accuracy (pre-merge − post-merge test accuracy, mean over tasks) than without "
                "(paired over seeds).", "merge drop", _vals(rows, seeds, st, "m2le", "merge_drop"),
                baseline="fisher", baselines={"fisher": _vals(rows, seeds, st, "fisher", "merge_drop")},
                better="lower", paired=True, requires=req))
    return claims


def math_checks(seed: int = 0) -> list:
    """Identities of HIM on random quadratics (diagonal H), against scipy's numerical optimum."""
    from scipy.optimize import minimize, minimize_scalar

    from m2le.merge import him_modulation, merge_lora, pm_alpha, takes_no_data

    rng = np.random.default_rng(seed)
    n = 20
    d, fp, fc = rng.normal(size=n), rng.exponential(size=n), rng.exponential(size=n)

    def joint(m):
        return 0.5 * np.sum(fp * (m * d) ** 2) + 0.5 * np.sum(fc * ((m - 1) * d) ** 2)

    def grad(m):  # the joint's gradient, by hand: BFGS with finite differences stops ~1e-6 from the optimum,
        return fp * m * d ** 2 + fc * (m - 1) * d ** 2  # a margin that moved with the CPU's rounding

    num = minimize(joint, np.full(n, 0.5), jac=grad, method="BFGS", options={"gtol": 1e-12}).x
    m = him_modulation(torch.tensor(d), torch.tensor(fp), torch.tensor(fc), damping=0.0).numpy()
    line = minimize_scalar(lambda a: joint(np.full(n, a)), bounds=(-1, 2), method="bounded",
                           options={"xatol": 1e-12}).x
    alpha = pm_alpha(torch.tensor(d), torch.tensor(fp), torch.tensor(fc))
    W = {"w": torch.tensor(rng.normal(size=n))}
    D, Fp, Fc = {"w": torch.tensor(d)}, {"w": torch.tensor(fp)}, {"w": torch.tensor(fc)}
    him, _ = merge_lora(W, D, Fp, Fc, merge="him", damping=1e-8)
    fis, _ = merge_lora(W, D, Fp, Fc, merge="fisher", damping=1e-8)
    return [
        Claim.check("him_equals_numerical_argmin", "Claim 2: HIM's closed-form m equals the numerical argmin of the "
                    "joint quadratic (BFGS, 20 elements, diagonal curvatures).", "max |m − m_BFGS|",
                    float(np.max(np.abs(m - num))), threshold=1e-5, better="lower"),
        Claim.check("scalar_equals_pm_alpha", "Constrained to one scalar, the joint objective's minimiser is P&M's α* "
                    "(bounded line search).", "|α* − α_line|", abs(alpha - line), threshold=1e-6, better="lower"),
        Claim.check("fisher_merge_equals_him", "Fisher-weighted averaging of the optima with accumulated Fishers "
                    "equals HIM's merge (the cross terms vanish at the merged anchor).", "max |W_fisher − W_HIM|",
                    float((him["w"] - fis["w"]).abs().max()), threshold=1e-9, better="lower"),
        Claim.check("merge_takes_no_data", "The merge's signature has no data argument (weights, LoRA deltas and "
                    "stored Fishers only).", "1 if no data argument", float(takes_no_data()), target=1.0, tol=0.0),
    ]


def stream_checks(rows, art) -> list:
    out = []
    ms = [v for d in art["m"].values() for v in d.values()]
    if ms:
        lo, hi = min(float(v.min()) for v in ms), max(float(v.max()) for v in ms)
        out.append(Claim.check("him_m_in_unit_interval", "Every HIM modulation of the run lies in [0, 1].",
                               "distance outside [0, 1]", max(0.0, -lo, hi - 1.0), threshold=0.0, better="lower"))
    return out


def run(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    torch.set_num_threads(int(cfg.threads) if str(cfg.threads).isdigit() else torch.get_num_threads())
    claims, checks, rows, art = [], math_checks(), [], None
    if cfg.streams.enabled:
        from m2le.experiments import run_all

        rows, art = run_all(cfg, seeds)
        claims += stream_claims(rows, seeds, cfg)
        checks += stream_checks(rows, art)
    if cfg.bench.enabled:
        from m2le.bench import run_bench

        c, k, r = run_bench(cfg)
        claims += c
        checks += k
        rows += r

    def plots(out_dir):
        if art is None:
            return
        from m2le.plot import plot_acc_matrices, plot_modulations

        plot_acc_matrices(art["acc"], Path(out_dir) / "acc_matrices.png")
        if art["m"]:
            plot_modulations(art["m"], art["alpha"], Path(out_dir) / "modulations.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "plots": plots}
