"""``run(cfg) -> dict``: the experiments, pure and callable from tests and notebooks.

Sections (each switched on by its config block):
  correctness  GETO-LP vs the full LP (POT, same HiGHS) on random and sparse 2D histograms;
               recovered plans checked against ot.emd2
  scaling      variables, wall time and peak memory vs N for GETO-LP, the full LP (with a timeout)
               and entropic barycenters scored by their true cost
  palette      a 3D RGB-histogram barycenter of scikit-learn's sample images, and palette transfer
  digits       averaging load_digits images (the offline stand-in for medical-data averaging)
  euclidean    the (non-exact) unsquared-Euclidean approximation and its gap to the full LP
  inputs       users' .npy files or images given on the CLI
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
from tqdm import tqdm

from getolp.barycenter import axis_costs, build_lp, fixed_support_barycenter, grid_cost_matrix
from getolp.baselines import entropic_barycenter, full_lp_barycenter, full_lp_n_variables, pixel_mean, true_cost
from getolp.data import digits_histograms, load_histogram, recolor, rgb_histogram, sample_images, synthetic_histograms
from getolp.measure import Measured, measure, peak_mib, solve_full, solve_geto
from paperworks import Claim, log_t_ci, seeds_of
from paperworks.metrics import loglog_slope

log = logging.getLogger(__name__)
NAN = float("nan")


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def plan_errors(info: dict, nu: np.ndarray, h: np.ndarray, C: np.ndarray) -> dict:
    """Worst marginal error (L1) and worst relative gap of ⟨C, π_m⟩ to ``ot.emd2(ν, μ_m, C)``."""
    import ot

    nu = np.asarray(nu, dtype=float).ravel()
    nu1 = nu * (h[0].sum() / nu.sum())
    marg, cost = 0.0, 0.0
    for p, hm in zip(info["plans"], h):
        rows, cols = np.asarray(p.sum(axis=1)).ravel(), np.asarray(p.sum(axis=0)).ravel()
        marg = max(marg, float(np.abs(rows - nu).sum()), float(np.abs(cols - hm).sum()))
        ref = ot.emd2(nu1, hm, C, numItermax=10_000_000)
        cost = max(cost, abs(float(p.multiply(C).sum()) - ref) / max(ref, info["objective"], 1e-300))
    return {"plan_marginal_err": marg, "plan_cost_rel_err": cost}


# sections --------------------------------------------------------------------------------------

def correctness(cfg, seeds, rows, solver: str) -> dict:
    gaps, plan_errs = [], []
    cases = [(tuple(g), i, kind, s) for g in cfg.grids for i, kind in enumerate(cfg.kinds) for s in seeds]
    for shape, i, kind, seed in tqdm(cases, desc="correctness", disable=None):
        rng = np.random.default_rng([seed, i, *shape])
        h = synthetic_histograms(rng, int(cfg.n_histograms), shape, kind).reshape(int(cfg.n_histograms), -1)
        w = rng.dirichlet(np.ones(h.shape[0]))
        nu, info = fixed_support_barycenter(h, shape, w, solver=solver, log=True)
        _, ref = full_lp_barycenter(h, shape, w, solver=solver, log=True)
        errs = plan_errors(info, nu, h, grid_cost_matrix(shape))
        gap = _rel(info["objective"], ref["objective"])
        gaps.append(gap)
        plan_errs.append(max(errs.values()))
        rows.append({"section": "correctness", "grid": "x".join(map(str, shape)), "kind": kind, "seed": seed,
                     "M": h.shape[0], "geto_objective": info["objective"], "full_lp_objective": ref["objective"],
                     "rel_gap": gap, "geto_variables": info["n_variables"], "full_lp_variables": ref["n_variables"],
                     **errs})
    return {"gaps": gaps, "plan_errs": plan_errs}


def _timed_at_claim_grid(cfg, h, shape, w, solver: str, run_full: bool, threads, rows, n: int):
    """GETO-LP and the full LP timed against each other, interleaved (paperworks.bench.compare)."""
    from paperworks.bench import compare

    out = {}

    def geto():
        out["geto"] = solve_geto(h, shape, w, solver)

    def full():
        out["full"] = solve_full(h, shape, w, solver)

    cands = {"geto": geto, **({"full_lp": full} if run_full else {})}
    res = compare(cands, repeats=int(cfg.claim_repeats), warmup=0, threads=threads)
    for r in res.rows():
        rows.append({"section": "bench_claim_grid", "grid": f"{n}x{n}", **r})
    g = Measured("ok", res.median("geto"), res.median("geto", "cpu"), out["geto"])
    f = (Measured("ok", res.median("full_lp"), res.median("full_lp", "cpu"), out["full"]) if run_full else
         Measured("skipped", error="the full LP is not attempted (full_lp_max_variables)"))
    return g, f, res


def _memory(kind: str, m: Measured, h, shape, w, solver: str, k: int, timeout_s: float) -> None:
    """Peak memory of ``k`` fresh-process calls (only for a solver that finished within its time)."""
    if not m.ok:
        return
    try:
        m.peak_mb_samples = [peak_mib(kind, h, shape, w, solver, timeout_s=timeout_s) for _ in range(k)]
    except TimeoutError:
        log.warning("peak memory of %s at %s: no result within %g s", kind, shape, timeout_s)
        return
    m.peak_mb = float(np.median(m.peak_mb_samples))


def scaling(cfg, seed: int, rows, solver: str, threads=1) -> dict:
    if cfg.memory not in ("all", "claim", "none"):
        raise ValueError(f"scaling.memory must be 'all', 'claim' or 'none', got {cfg.memory!r}")
    out = {"N": [], "geto_vars": [], "full_vars": [], "records": []}
    for n in tqdm(list(cfg.grids), desc="scaling", disable=None):
        shape = (int(n), int(n))
        rng = np.random.default_rng([seed, int(n)])
        h = synthetic_histograms(rng, int(cfg.n_histograms), shape, cfg.kind).reshape(int(cfg.n_histograms), -1)
        w = rng.dirichlet(np.ones(h.shape[0]))
        geto_vars = build_lp(h, shape, w, axis_costs(shape))[1].shape[1]  # counted on the built LP
        full_vars = full_lp_n_variables(shape, h.shape[0])
        run_full = full_vars <= float(cfg.full_lp_max_variables)
        bench = None
        iso = bool(cfg.isolate)
        if int(n) == int(cfg.claim_grid):  # the speed claim: repeated, interleaved, in-process
            g, f, bench = _timed_at_claim_grid(cfg, h, shape, w, solver, run_full, threads, rows, int(n))
        else:  # one call each, the full LP in a child killed at its timeout
            g = measure(solve_geto, h, shape, w, solver, timeout_s=float(cfg.geto_timeout_s), isolate=iso)
            f = (measure(solve_full, h, shape, w, solver, timeout_s=float(cfg.full_lp_timeout_s), isolate=iso)
                 if run_full else Measured("skipped", error=f"{full_vars} variables > full_lp_max_variables"))
        for who, m in (("GETO-LP", g), ("full LP", f)):
            if m.status in ("timeout", "failed"):
                log.warning("%s at %s: %s %s", who, shape, m.status, m.error)
        at_claim = int(n) == int(cfg.claim_grid)
        if cfg.memory == "all" or (cfg.memory == "claim" and at_claim):
            k = int(cfg.memory_repeats) if at_claim else 1
            _memory("geto", g, h, shape, w, solver, k, float(cfg.geto_timeout_s))
            _memory("full", f, h, shape, w, solver, k, float(cfg.full_lp_timeout_s))
        C = grid_cost_matrix(shape)
        geto_cost = true_cost(g.value[0], h, shape, w, C=C) if g.ok else NAN
        ent = {}
        for reg in cfg.regs:
            e = measure(entropic_barycenter, h, shape, float(reg), w, method=cfg.entropic_method,
                        num_iter_max=int(cfg.entropic_iters), stop_thr=float(cfg.entropic_stop_thr),
                        timeout_s=float(cfg.geto_timeout_s), isolate=iso)
            ent[float(reg)] = (e, true_cost(e.value, h, shape, w, C=C) if e.ok else NAN)
        geto_obj = g.value[1]["objective"] if g.ok else NAN
        full_obj = f.value[1]["objective"] if f.ok else NAN
        row = {"section": "scaling", "grid": f"{n}x{n}", "N": n * n, "M": h.shape[0],
               "geto_variables": geto_vars, "full_lp_variables": full_vars,
               **g.row("geto"), **f.row("full_lp"), "geto_objective": geto_obj, "geto_true_cost": geto_cost,
               "full_lp_objective": full_obj, "rel_gap": _rel(geto_obj, full_obj) if f.ok and g.ok else NAN,
               "time_ratio": (f.wall_s / g.wall_s) if g.ok and f.wall_s else NAN,
               "memory_ratio": (f.peak_mb / g.peak_mb) if g.peak_mb and f.peak_mb else NAN,
               "timing": "interleaved median" if bench is not None else "one call"}
        for reg, (e, tc) in ent.items():
            row.update({f"entropic_{reg:g}_status": e.status, f"entropic_{reg:g}_wall_s": e.wall_s,
                        f"entropic_{reg:g}_true_cost": tc,
                        f"entropic_{reg:g}_excess": (tc - geto_cost) / geto_cost if g.ok else NAN,
                        f"entropic_{reg:g}_support": int((e.value > 1e-3 / e.value.size).sum()) if e.ok else NAN})
        row["geto_support"] = int((g.value[0] > 1e-3 / g.value[0].size).sum()) if g.ok else NAN
        rows.append(row)
        log.info("scaling %s: GETO %s %.2fs %s MiB | full LP %s %s s %s MiB", shape, g.status, g.wall_s or NAN,
                 f"{g.peak_mb:.0f}" if g.peak_mb else "-", f.status, f"{f.wall_s:.2f}" if f.wall_s else "-",
                 f"{f.peak_mb:.0f}" if f.peak_mb else "-")
        out["N"].append(n * n)
        out["geto_vars"].append(row["geto_variables"])
        out["full_vars"].append(f.value[1]["n_variables"] if f.ok else full_vars)
        out["records"].append({"n": int(n), "h": h, "geto": g, "full": f, "entropic": ent, "geto_cost": geto_cost,
                               "row": row, "bench": bench})
    return out


def palette(cfg, rows, solver: str) -> dict:
    images = sample_images()
    names = sorted(images)
    bins = int(cfg.bins)
    shape = (bins,) * 3
    h = np.stack([rgb_histogram(images[k], bins).ravel() for k in names])
    nu, info = fixed_support_barycenter(h, shape, solver=solver, log=True)
    C = grid_cost_matrix(shape)
    errs = plan_errors(info, nu, h, C)
    ref = full_lp_barycenter(h, shape, solver=solver, log=True)[1] if cfg.full_lp else None
    gap = _rel(info["objective"], ref["objective"]) if ref else NAN
    ibp = entropic_barycenter(h, shape, float(cfg.reg), method="ibp", num_iter_max=int(cfg.entropic_iters))
    ibp_cost = true_cost(ibp, h, shape, C=C)
    rows.append({"section": "palette", "grid": "x".join(map(str, shape)), "M": len(names),
                 "geto_objective": info["objective"], "full_lp_objective": ref["objective"] if ref else NAN,
                 "rel_gap": gap, "geto_variables": info["n_variables"],
                 "full_lp_variables": full_lp_n_variables(shape, len(names)), "geto_solve_s": info["solve_time"],
                 f"entropic_{float(cfg.reg):g}_true_cost": ibp_cost, **errs})
    recoloured = {k: recolor(images[k], p, bins) for k, p in zip(names, info["plans"])}
    return {"gap": gap, "plan_err": max(errs.values()), "names": names, "images": images,
            "recoloured": recoloured, "nu": nu, "ibp_excess": (ibp_cost - info["objective"]) / info["objective"]}


def digits(cfg, rows, solver: str, seed: int) -> dict:
    h3 = digits_histograms(int(cfg.digit), int(cfg.n_images), rng=np.random.default_rng(seed))
    shape = (8, 8)
    h = h3.reshape(h3.shape[0], -1)
    nu, info = fixed_support_barycenter(h, shape, solver=solver, log=True)
    C = grid_cost_matrix(shape)
    errs = plan_errors(info, nu, h, C)
    ref = full_lp_barycenter(h, shape, solver=solver, log=True)[1]
    gap = _rel(info["objective"], ref["objective"])
    mean = pixel_mean(h, shape)
    ibp = entropic_barycenter(h, shape, float(cfg.reg), method="convolutional", num_iter_max=int(cfg.entropic_iters))
    costs = {"pixel_mean": true_cost(mean, h, shape, C=C), f"entropic_{float(cfg.reg):g}": true_cost(ibp, h, shape, C=C)}
    rows.append({"section": "digits", "grid": "8x8", "M": h.shape[0], "geto_objective": info["objective"],
                 "full_lp_objective": ref["objective"], "rel_gap": gap, "geto_variables": info["n_variables"],
                 "full_lp_variables": ref["n_variables"], **{f"{k}_true_cost": v for k, v in costs.items()}, **errs})
    return {"gap": gap, "plan_err": max(errs.values()), "inputs": h3, "nu": nu, "mean": mean, "ibp": ibp,
            "excess": {k: (v - info["objective"]) / info["objective"] for k, v in costs.items()}}


def euclidean_gap(cfg, rows, solver: str, seed: int) -> dict:
    shape = tuple(cfg.grid)
    rng = np.random.default_rng([seed, 7])
    h = synthetic_histograms(rng, int(cfg.n_histograms), shape, "random").reshape(int(cfg.n_histograms), -1)
    _, info = fixed_support_barycenter(h, shape, cost="euclidean", approximate=True, solver=solver, log=True)
    ref = full_lp_barycenter(h, shape, cost="euclidean", solver=solver, log=True)[1]
    gap = (info["objective"] - ref["objective"]) / ref["objective"]
    rows.append({"section": "euclidean", "grid": "x".join(map(str, shape)), "M": h.shape[0],
                 "geto_objective": info["objective"], "full_lp_objective": ref["objective"], "rel_gap": gap,
                 "geto_exact": info["exact"]})
    return {"gap": gap}


def user_inputs(cfg, rows, solver: str, out_dir: Path | None) -> dict:
    grid = tuple(cfg.grid) if cfg.get("grid") else None
    hs = [load_histogram(p, grid, mode=cfg.mode, bins=int(cfg.bins)) for p in cfg.paths]
    shape = hs[0].shape
    if any(x.shape != shape for x in hs):
        raise ValueError(f"inputs must share one grid, got shapes {[x.shape for x in hs]}")
    h = np.stack([x.ravel() for x in hs])
    nu, info = fixed_support_barycenter(h, shape, solver=solver, log=True)
    errs = plan_errors(info, nu, h, grid_cost_matrix(shape)) if h.shape[1] <= 4096 else {}
    rows.append({"section": "inputs", "grid": "x".join(map(str, shape)), "M": h.shape[0],
                 "geto_objective": info["objective"], "geto_variables": info["n_variables"], **errs})
    if out_dir is not None:
        tmp = out_dir / ".barycenter.npy.tmp"
        with open(tmp, "wb") as f:
            np.save(f, nu)
        tmp.replace(out_dir / "barycenter.npy")
    return {"nu": nu, "plan_err": max(errs.values()) if errs else NAN, "shape": shape}


# claims ----------------------------------------------------------------------------------------

def _claim_record(sc: dict, n: int) -> dict | None:
    return next((r for r in sc["records"] if r["n"] == n), None)


def build_claims(cfg, res: dict) -> list[Claim]:
    """The claims and (as ``Claim.check``) the counts that follow from the formula."""
    claims = []
    sc = res.get("scaling")
    if sc and len(sc["N"]) >= 2:
        g_slope, _ = loglog_slope(sc["N"], sc["geto_vars"])
        f_slope, _ = loglog_slope(sc["N"], sc["full_vars"])
        # the variable counts of the built LPs follow from their formulas: a check, not a claim
        claims.append(Claim.check(
            "variables_O_N_1.5", "GETO-LP has O(d M N^(1+1/d)) variables against O(M N^2) for the standard LP.",
            "log-log slope of the variable count vs N (2D grids; 1+1/d = 1.5)", g_slope, threshold=1.5,
            better="lower",
            notes=f"full LP slope {f_slope:.3f}; counts of the built LPs at N={sc['N']}: GETO {sc['geto_vars']}, "
                  f"full {sc['full_vars']} (full: POT's LP where it ran, M N^2 + N where it was not attempted)"))
    gaps = list(res["correctness"]["gaps"]) if "correctness" in res else []
    gaps += [r["row"]["rel_gap"] for r in (sc or {}).get("records", []) if math.isfinite(r["row"]["rel_gap"])]
    # a deterministic solver's objective: the values are exact quantities (no seed noise)
    claims.append(Claim.threshold(
        "exact_objective", "GETO-LP is exact: the same optimal value as the standard LP.",
        "max relative objective gap to ot.lp.barycenter (same HiGHS)", max(gaps) if gaps else NAN,
        threshold=1e-7, better="lower", exact=True, notes=f"{len(gaps)} instances (correctness and scaling)"))
    perrs = list(res["correctness"]["plan_errs"]) if "correctness" in res else []
    for k in ("palette", "digits"):
        if k in res:
            perrs.append(res[k]["plan_err"])
    # at scale (no full LP needed): the LP objective against Σ λ_m ot.emd2(ν, μ_m) of its own ν
    at_scale = [_rel(r["row"]["geto_objective"], r["geto_cost"]) for r in (sc or {}).get("records", [])
                if r["geto"].ok]
    claims.append(Claim.threshold(
        "exact_plans", "ν and all M transport plans are read from the GETO-LP solution (path decomposition).",
        "max over instances of plan marginal L1 error, plan-cost gap to ot.emd2(ν, μ_m), objective gap to "
        "Σ λ_m ot.emd2(ν, μ_m)", max(perrs + at_scale) if perrs + at_scale else NAN,
        threshold=1e-7, better="lower", exact=True,
        notes=f"plans checked on {len(perrs)} instances; objective vs emd2 of ν on {len(at_scale)} scaling grids"))
    if sc:
        n = int(cfg.scaling.claim_grid)
        rec = _claim_record(sc, n)
        claims += _speed_memory_claims(rec, n)
        claims.append(_entropic_claim(rec, n))
    apps = [(k, res[k]["gap"]) for k in ("palette", "digits") if k in res and math.isfinite(res[k]["gap"])]
    if apps:
        base = {}
        if "palette" in res:
            base["palette_entropic_excess"] = res["palette"]["ibp_excess"]
        if "digits" in res:
            base.update({f"digits_{k}_excess": v for k, v in res["digits"]["excess"].items()})
        claims.append(Claim.threshold(
            "applications", "It works on applications: 3D RGB colour palettes and averaging (digits) images.",
            "max relative objective gap to the full LP on the palette (8^3 RGB) and digits barycenters",
            max(g for _, g in apps), threshold=1e-7, better="lower", exact=True, baselines=base,
            notes="baselines: relative excess true cost of the entropic / pixel-mean averages over GETO-LP; "
                  f"instances {[k for k, _ in apps]}; medical data not available offline"))
    return claims


def _speed_memory_claims(rec, n: int) -> list[Claim]:
    """Time (interleaved repeats, paperworks.bench) and peak memory (fresh processes) at the claim grid."""
    t_val, m_val, t_base, m_base, t_note, m_note = NAN, NAN, {}, {}, "", ""
    bench = rec.get("bench") if rec is not None else None
    if rec is None or bench is None:
        t_note = m_note = "no measurement at the claim grid"
    elif not rec["full"].ok:
        t_note = m_note = f"the full LP was {rec['full'].status} at {n}x{n}: no ratio"
    else:
        t_val = bench.speedup("geto", over="full_lp")
        t_base = {"GETO-LP wall s": bench.time("geto"), "full LP wall s": bench.time("full_lp"),
                  "CPU-time ratio full / GETO": bench.speedup("geto", over="full_lp", kind="cpu")}
        t_note = (f"{bench.repeats} interleaved calls of each, in one process ({bench.threads} thread(s)); the ratio "
                  "is the median of the per-round full/GETO ratios")
        g, f = rec["geto"].peak_mb_samples, rec["full"].peak_mb_samples
        if g and f and len(g) == len(f) and min(g) > 0:
            m_val = log_t_ci([b / a for a, b in zip(g, f)])
            m_base = {"GETO-LP MiB": float(np.median(g)), "full LP MiB": float(np.median(f))}
            m_note = (f"peak-RSS rise of {len(g)} fresh-process calls of each (paperworks.bench.peak_memory); "
                      "ratios of the i-th calls, geometric mean")
        else:
            m_note = "peak memory not measured at the claim grid (scaling.memory=none) or not finished"
    return [
        Claim.threshold("faster_than_full_lp", f"At {n}x{n}, M=4, GETO-LP is at least 10x faster than the full LP "
                        "(same HiGHS solver).", f"full-LP time / GETO-LP time at {n}x{n} (wall)", t_val,
                        threshold=10.0, better="higher", baselines=t_base, notes=t_note),
        Claim.threshold("less_memory_than_full_lp", f"At {n}x{n}, M=4, GETO-LP needs at least 10x less peak memory "
                        "than the full LP.", f"full-LP peak memory / GETO-LP peak memory at {n}x{n}", m_val,
                        threshold=10.0, better="higher", baselines=m_base, notes=m_note),
    ]


def _entropic_claim(rec, n: int) -> Claim:
    ent = {} if rec is None else {f"entropic_reg={reg:g}": tc for reg, (_, tc) in rec["entropic"].items()}
    finite = {k: v for k, v in ent.items() if math.isfinite(v)}
    value = rec["geto_cost"] if rec is not None else NAN
    if not finite or len(finite) < len(ent):
        return Claim.threshold("more_accurate_than_entropic", "GETO-LP is more accurate than entropic solvers.",
                               f"true barycenter cost at {n}x{n}", NAN, threshold=0.0, better="lower",
                               baselines=finite, notes="not every entropic baseline finished")
    # true costs by exact OT of deterministic solvers' outputs: exact values
    return Claim.compare_all("more_accurate_than_entropic", "GETO-LP is more accurate than entropic solvers.",
                             f"true (unregularised) barycenter cost at {n}x{n}, by ot.emd2", value, baselines=ent,
                             better="lower", exact=True, notes="against every entropic regularisation run")


def _user_claim(res) -> Claim:
    return Claim.threshold("exact_plans", "ν and all M transport plans are read from the GETO-LP solution.",
                           "max over plans of marginal L1 error and relative cost gap to ot.emd2(ν, μ_m)",
                           res["plan_err"], threshold=1e-7, better="lower", exact=True, notes="on the user's inputs")


# entry point -----------------------------------------------------------------------------------

def run(cfg, out_dir: Path | None = None) -> dict:
    """Run the enabled sections; return claims, checks, metrics rows, extra and ``plots``.

    Threads are pinned by the caller (the ``threads`` key through :mod:`paperworks.hydra_glue`).
    """
    seeds = seeds_of(cfg)
    solver = str(cfg.solver)
    rows: list[dict] = []
    res: dict = {}
    if cfg.get("inputs") and cfg.inputs.get("paths"):
        res["inputs"] = user_inputs(cfg.inputs, rows, solver, out_dir)
        items = [_user_claim(res["inputs"])]
    else:
        if cfg.correctness.enabled:
            res["correctness"] = correctness(cfg.correctness, seeds, rows, solver)
        if cfg.scaling.enabled:
            res["scaling"] = scaling(cfg.scaling, seeds[0], rows, solver, threads=cfg.get("threads", None) or 1)
        if cfg.palette.enabled:
            res["palette"] = palette(cfg.palette, rows, solver)
        if cfg.digits.enabled:
            res["digits"] = digits(cfg.digits, rows, solver, seeds[0])
        if cfg.euclidean.enabled:
            res["euclidean"] = euclidean_gap(cfg.euclidean, rows, solver, seeds[0])
        items = build_claims(cfg, res)
    extra = {}
    if "euclidean" in res:
        extra["euclidean_approximation_rel_gap"] = res["euclidean"]["gap"]

    def plots(out_dir: Path) -> None:
        from getolp import plot

        out_dir = Path(out_dir)
        if "scaling" in res:
            plot.plot_scaling(res["scaling"]["records"], out_dir / "scaling.png")
            plot.plot_barycenters(res["scaling"]["records"], out_dir / "barycenters.png")
        if "palette" in res:
            plot.plot_palette(res["palette"], out_dir / "palette.png")
        if "digits" in res:
            plot.plot_digits(res["digits"], out_dir / "digits.png")
        if "inputs" in res and len(res["inputs"]["shape"]) == 2:
            plot.plot_image(res["inputs"]["nu"], out_dir / "barycenter.png")

    return {"claims": [c for c in items if c.kind == "claim"], "checks": [c for c in items if c.kind == "check"],
            "metrics": rows, "seeds": seeds, "extra": extra, "plots": plots}
