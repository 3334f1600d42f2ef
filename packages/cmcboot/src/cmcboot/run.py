"""``run(cfg) -> dict``: the RiverSwim coverage study (smoke/quick/paper) and the speed bench.

Coverage study: for every behaviour × data regime ("cell") draw ``M`` data sets from the true
RiverSwim, build every method's intervals for ``V^π``, ``Q^π`` and ``Q*`` at each level, and record
whether they cover the exact truth. Methods: the model-based bootstrap (percentile, basic, normal),
the episodic bootstrap (percentile, basic, normal; episodic cells only) and the plug-in CLT. All
bootstraps get the same ``B``. The claims' intervals come from resampling the ``M`` data sets of
each cell; the resamples are shared by every method, so a comparison is judged on the interval of
the paired difference (method − baseline over the same resamples).
"""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path

import numpy as np
from scipy import stats
from tqdm import tqdm

from cmcboot.baselines import delta_method, episodic_bootstrap_counts
from cmcboot.bootstrap import confidence_intervals, estimate_behaviour, estimate_kernel, simulate_counts
from cmcboot.data import riverswim_behaviours, simulate_datasets
from cmcboot.envs import riverswim
from cmcboot.mdp import policy_evaluation, targets, tie_mask, value_iteration
from paperworks import Claim, Estimate, seeds_of

log = logging.getLogger(__name__)
TARGETS = ("V", "Q", "Qstar")
BOOT_CI = ("percentile", "basic", "normal")


def run(cfg, out_dir: Path | None = None) -> dict:
    # BLAS threads: the common ``threads`` key (1: many tiny matrix products, more threads only fight
    # over the cores), pinned once by paperworks before the run
    if str(cfg.get("mode", "coverage")) == "bench":
        from cmcboot.bench import run_bench

        return run_bench(cfg, out_dir)
    return run_coverage(cfg, out_dir)


# the coverage study ------------------------------------------------------------------------------

def _cells(cfg) -> list[dict]:
    cells = []
    for beh in cfg.behaviours:
        for n in cfg.chain_lengths:
            cells.append({"behaviour": str(beh), "regime": "chain", "K": 1, "T": int(n), "size": f"n={int(n)}"})
        for T in cfg.episode_lengths:
            K = max(2, int(cfg.episodic_transitions) // int(T))
            cells.append({"behaviour": str(beh), "regime": "episodic", "K": K, "T": int(T), "size": f"T={int(T)}"})
    return cells


def _episode_counts(data: np.ndarray, S: int, A: int) -> np.ndarray:
    D, K = data.shape[:2]
    code = (data[..., 0] * A + data[..., 1]) * S + data[..., 2]
    key = (np.arange(D * K).reshape(D, K, 1) * (S * A * S) + code).ravel()
    return np.bincount(key, minlength=D * K * S * A * S).reshape(D, K, S, A, S)


def _cover(lo, hi, truth) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = lo.reshape(lo.shape[0], -1), hi.reshape(hi.shape[0], -1)
    t = truth.reshape(1, -1)
    return (lo <= t) & (t <= hi), hi - lo


def _chunk_cell(cell, P, R, gamma, pi, truth, behaviour, initial, n_datasets, n_boot, levels, rng):
    """Coverage indicators and widths of every method on ``n_datasets`` data sets of one cell."""
    S, A = R.shape
    K, T = cell["K"], cell["T"]
    data = simulate_datasets(P, behaviour, n_datasets=n_datasets, n_episodes=K, length=T, initial=initial, rng=rng)
    ep = _episode_counts(data, S, A)
    counts = ep.sum(1)
    P_hat, empty = estimate_kernel(counts)
    pi_b = estimate_behaviour(counts)
    starts = data[:, :, 0, 0]
    out, width = {}, {}
    point = {tg: targets(P_hat, R, gamma, tg, pi) for tg in TARGETS}
    kernels = {"model": simulate_counts(P_hat, pi_b, starts, np.full(K, T), n_boot, rng,
                                        resample_starts=cell["regime"] == "episodic")}
    if K >= 2:
        kernels["episodic"] = episodic_bootstrap_counts(ep, n_boot, rng)
    extra = {"unvisited_rate": float(empty.mean()), "argmax_flip": None, "visits": counts.sum(-1)}
    for name, boot_counts in kernels.items():
        Pb, _ = estimate_kernel(boot_counts)
        for tg in TARGETS:
            q0 = point[tg][:, None] if tg == "Qstar" else None
            reps = targets(Pb, R, gamma, tg, pi, q0=q0)
            if name == "model" and tg == "Qstar":
                extra["argmax_flip"] = (reps.argmax(-1) != point[tg][:, None].argmax(-1)).mean((0, 1))
            for (ci, lev), (lo, hi) in confidence_intervals(point[tg], reps, levels, BOOT_CI, axis=1).items():
                out[(f"{name}_{ci}", tg, lev)], width[(f"{name}_{ci}", tg, lev)] = _cover(lo, hi, truth[tg])
    for tg in TARGETS:
        est, se = delta_method(P_hat, counts.sum(-1), R, gamma, tg, None if tg == "Qstar" else pi)
        for lev in levels:
            h = stats.norm.ppf(0.5 + lev / 2) * se
            out[("clt", tg, lev)], width[("clt", tg, lev)] = _cover(est - h, est + h, truth[tg])
    return out, width, extra


def run_coverage(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    gamma = float(cfg.gamma)
    P, R = riverswim(int(cfg.env.n_states), variant=str(cfg.env.variant))
    S, A = R.shape
    pi = np.full((S, A), 1.0 / A)  # the evaluated policy π: uniformly random (our choice)
    V, Q = policy_evaluation(P, R, pi, gamma)
    truth = {"V": V, "Q": Q, "Qstar": value_iteration(P, R, gamma)}
    behaviours = riverswim_behaviours(S, float(cfg.behaviour_bias))
    levels = [float(x) for x in cfg.levels]
    n_boot = int(cfg.n_boot)
    per_seed = int(cfg.datasets_per_seed)
    chain_init = np.eye(S)[int(cfg.chain_start)]
    epi_init = np.full(S, 1.0 / S)
    def one_cell(cell, behaviour, index):
        tc = time.perf_counter()
        ind, wid, flips, unvis, visits = {}, {}, [], [], []
        chunk = max(1, int(cfg.max_width) // (n_boot * cell["K"]))
        for seed in seeds:
            rng = np.random.default_rng([seed, index])
            for start in range(0, per_seed, chunk):
                n_d = min(chunk, per_seed - start)
                o, w, ex = _chunk_cell(cell, P, R, gamma, pi, truth, behaviour,
                                       chain_init if cell["regime"] == "chain" else epi_init, n_d, n_boot, levels, rng)
                for k in o:
                    ind.setdefault(k, []).append(o[k])
                    wid.setdefault(k, []).append(w[k])
                flips.append(ex["argmax_flip"] * n_d)
                unvis.append(ex["unvisited_rate"] * n_d)
                visits.append(ex["visits"])
        M = per_seed * len(seeds)
        name = f"{cell['behaviour']}_{cell['size']}" + (f"_bias{cell['bias']:g}" if "bias" in cell else "")
        t_cells[f"{name}_s"] = time.perf_counter() - tc
        log.info("cell %s done in %.1f s", name, t_cells[f"{name}_s"])
        return {**cell, "M": M, "ind": {k: np.concatenate(v) for k, v in ind.items()},
                "width": {k: np.concatenate(v).mean(0) for k, v in wid.items()}, "visits": np.concatenate(visits),
                "argmax_flip": np.sum(flips, 0) / M, "unvisited_rate": float(np.sum(unvis) / M)}

    cells = _cells(cfg)
    t_cells = {}
    t0 = time.perf_counter()
    results = [one_cell(c, behaviours[c["behaviour"]], i) for i, c in enumerate(tqdm(cells, desc="cells", disable=None))]
    # the behaviour-bias sweep: mostly-left/right chains of the largest length at every bias
    sweep = []
    n_sweep = int(max(cfg.chain_lengths))
    for j, (beh, bias) in enumerate(itertools.product(cfg.get("sweep_behaviours", []), cfg.get("bias_sweep", []))):
        cell = {"behaviour": str(beh), "regime": "chain", "K": 1, "T": n_sweep, "size": f"n={n_sweep}",
                "bias": float(bias)}
        sweep.append(one_cell(cell, riverswim_behaviours(S, float(bias))[str(beh)], 1000 + j))
    t_sim = time.perf_counter() - t0

    # paired resampling of the data sets of each cell, for the claims' intervals
    n_res = int(cfg.claim_resamples)
    crng = np.random.default_rng([seeds[0], 99])
    for res in results:
        W = crng.multinomial(res["M"], np.full(res["M"], 1.0 / res["M"]), size=n_res) / res["M"]
        W = np.vstack([np.full((1, res["M"]), 1.0 / res["M"]), W])  # row 0: the data as observed
        res["cov"] = {k: W @ v.astype(float) for k, v in res["ind"].items()}

    metrics = _metrics_rows(results, truth, levels)
    diagnosis = _diagnosis(results, sweep, truth, S, A)
    claims = _claims(cfg, results, levels)
    ties = tie_mask(truth["Qstar"])
    extra = {
        "true_values": {k: v.tolist() for k, v in truth.items()},
        "true_qstar_ties": int(ties.sum()),
        "argmax_flip_rate": {f"{r['behaviour']}_{r['size']}": r["argmax_flip"].tolist() for r in results},
        "unvisited_rate": {f"{r['behaviour']}_{r['size']}": r["unvisited_rate"] for r in results},
        "datasets_per_cell": per_seed * len(seeds), "n_boot": n_boot,
        "coverage_by_reward_visits": [r for r in diagnosis if r["part"] == "by_reward_visits"],
        "bias_sweep": [r for r in diagnosis if r["part"] == "bias_sweep"],
        "conventions": {"unvisited": "uniform P̂(·|s,a)", "evaluated_policy": "uniform random",
                        "rewards": "known (true R)", "chain_start": int(cfg.chain_start),
                        "episode_start": "uniform over states"},
    }

    def plots(out_dir: Path) -> None:
        from cmcboot.plot import plot_coverage, plot_diagnosis

        plot_coverage(metrics, Path(out_dir) / "coverage.png", level=max(levels))
        plot_diagnosis(diagnosis, Path(out_dir) / "coverage_vs_visits.png")

    return {"claims": claims, "metrics": metrics + diagnosis, "seeds": seeds,
            "timings": {"simulation_s": t_sim, **t_cells}, "extra": extra, "plots": plots}


def _metrics_rows(results, truth, levels) -> list[dict]:
    rows = []
    for res in results:
        for (method, tg, lev), cov in res["cov"].items():
            c = cov[0]
            t = np.abs(truth[tg]).reshape(-1)
            row = {"part": "coverage", "behaviour": res["behaviour"], "regime": res["regime"], "size": res["size"], "K": res["K"],
                   "T": res["T"], "method": method, "target": tg, "level": lev, "M": res["M"],
                   "coverage_mean": float(c.mean()), "coverage_min": float(c.min()),
                   "abs_calibration_error": float(np.abs(c - lev).mean()),
                   "coverage_entry_1_0": float(c[1 if tg == "V" else truth[tg].shape[1]]),
                   "rel_width": float(np.mean(res["width"][(method, tg, lev)] / np.maximum(t, 1e-12))),
                   "unvisited_rate": res["unvisited_rate"]}
            rows.append(row)
    return rows


DIAG_METHODS = ("model_percentile", "clt")
VISIT_BINS = (0, 1, 10, 100, 1000)


def _diagnosis(results, sweep, truth, S, A, level=0.95) -> list[dict]:
    """Coverage explained: per behaviour and state with visit counts, against the visits of the
    rewarding pair, and along the behaviour-bias sweep (at ``level``, methods :data:`DIAG_METHODS`)."""
    from cmcboot.envs import RIGHT

    rows = []
    hot = (S - 1) * A + RIGHT                      # the large reward: right in the last cell
    for res in results:
        vis_s = res["visits"].sum(-1)              # (M, S)
        for s in range(S):
            row = {"part": "per_state", "behaviour": res["behaviour"], "regime": res["regime"], "size": res["size"],
                   "state": s, "M": res["M"], "visits_mean": float(vis_s[:, s].mean()),
                   "visits_median": float(np.median(vis_s[:, s])),
                   "unvisited_share": float((vis_s[:, s] == 0).mean())}
            for m in DIAG_METHODS:
                row[f"{m}_V"] = float(res["ind"][(m, "V", level)][:, s].mean())
                row[f"{m}_Q"] = float(res["ind"][(m, "Q", level)][:, s * A:(s + 1) * A].mean())
            rows.append(row)
    for beh in dict.fromkeys(r["behaviour"] for r in results):
        cells = [r for r in results if r["behaviour"] == beh]
        n_hot = np.concatenate([r["visits"].reshape(r["M"], -1)[:, hot] for r in cells])
        cov = {m: np.concatenate([np.concatenate([r["ind"][(m, tg, level)] for tg in ("V", "Q")], 1) for r in cells])
               for m in DIAG_METHODS}
        edges = list(VISIT_BINS) + [np.inf]
        for lo, hi in zip(edges[:-1], edges[1:]):
            sel = (n_hot >= lo) & (n_hot < hi) if lo > 0 else n_hot == 0
            if lo == 0:
                label = "0"
            else:
                label = f"{lo}+" if hi == np.inf else f"{lo}-{int(hi) - 1}"
            row = {"part": "by_reward_visits", "behaviour": beh, "reward_pair_visits": label,
                   "n_datasets": int(sel.sum())}
            for m in DIAG_METHODS:
                row[m] = float(cov[m][sel].mean()) if sel.any() else float("nan")
            rows.append(row)
    for res in sweep:
        vis = res["visits"].reshape(res["M"], -1)
        row = {"part": "bias_sweep", "behaviour": res["behaviour"], "bias": res["bias"], "size": res["size"],
               "M": res["M"], "unvisited_rate": res["unvisited_rate"], "reward_pair_visits_mean": float(vis[:, hot].mean()),
               "reward_pair_unvisited_share": float((vis[:, hot] == 0).mean())}
        for m in DIAG_METHODS:
            for tg in TARGETS:
                row[f"{m}_{tg}"] = float(res["ind"][(m, tg, level)].mean())
        rows.append(row)
    return rows


def _calibration(results, method, sel, targets_=TARGETS, levels=None):
    """Resampled mean |coverage − level| over the selected cells, targets, levels and entries."""
    parts, weights = [], []
    for res in results:
        if not sel(res):
            continue
        for (m, tg, lev), cov in res["cov"].items():
            if m == method and tg in targets_ and (levels is None or lev in levels):
                parts.append(np.abs(cov - lev).mean(1))
                weights.append(cov.shape[1])
    if not parts:
        return None
    return np.average(np.stack(parts, 1), axis=1, weights=weights)


def _entry_coverage(results, method, sel, tg, lev, s, a, n_actions=2):
    """Resampled coverage of entry ``(s, a)`` (``s`` for ``V``) pooled over the selected cells."""
    parts = [res["cov"][(method, tg, lev)][:, s * n_actions + a if tg != "V" else s] for res in results
             if sel(res) and (method, tg, lev) in res["cov"]]
    return None if not parts else np.mean(np.stack(parts, 1), 1)


def _est(x, level=0.95) -> Estimate:
    """Row 0 is the observed value; rows 1.. its resamples (percentile interval)."""
    lo, hi = np.quantile(x[1:], [(1 - level) / 2, (1 + level) / 2])
    return Estimate(float(x[0]), float(lo), float(hi), len(x) - 1, level, "dataset-bootstrap")


def _est_bias_corrected(x, level=0.95) -> Estimate:
    """For a mean |coverage − nominal|: sampling noise inflates it, so correct the bias.

    Value ``2θ̂ − mean(θ*)`` and the basic interval ``[2θ̂ − q_hi, 2θ̂ − q_lo]`` (both clipped at 0),
    from the data-set resamples ``θ*`` (rows 1..; row 0 is ``θ̂``).
    """
    lo, hi = np.quantile(x[1:], [(1 - level) / 2, (1 + level) / 2])
    v = max(0.0, 2 * x[0] - float(x[1:].mean()))
    return Estimate(v, max(0.0, 2 * x[0] - hi), max(0.0, 2 * x[0] - lo), len(x) - 1, level, "dataset-bootstrap-basic")


def _est_paired_difference(x, y, level=0.95) -> Estimate:
    """Bias-corrected difference of two mean |coverage − nominal| on the *same* data-set resamples.

    ``x``, ``y``: rows 0 the observed values, rows 1.. the shared resamples. Value ``2d̂ − mean(d*)``
    with the basic interval of ``d = x − y`` (not clipped: a difference may be negative).
    """
    d = np.asarray(x) - np.asarray(y)
    lo, hi = np.quantile(d[1:], [(1 - level) / 2, (1 + level) / 2])
    v = 2 * d[0] - float(d[1:].mean())
    return Estimate(v, min(v, 2 * d[0] - hi), max(v, 2 * d[0] - lo), len(d) - 1, level, "dataset-bootstrap-paired-basic")


def _claims(cfg, results, levels) -> list[Claim]:
    tol = float(cfg.claim_tolerance)
    n_max, n_min = max(cfg.chain_lengths), min(cfg.chain_lengths)
    T_max, T_min = max(cfg.episode_lengths), min(cfg.episode_lengths)
    largest = lambda r: (r["regime"] == "chain" and r["T"] == n_max) or (r["regime"] == "episodic" and r["T"] == T_max)  # noqa: E731
    small = lambda r: (r["regime"] == "chain" and r["T"] == n_min) or (r["regime"] == "episodic" and r["T"] == T_min)  # noqa: E731
    episodic = lambda r: r["regime"] == "episodic"  # noqa: E731
    every = lambda r: True  # noqa: E731
    hist = "history" if "history" in cfg.behaviours else str(cfg.behaviours[0])
    ce = "mean |coverage − nominal| (levels 50/90/95%, targets V/Q/Q*, all entries; bias-corrected)"

    def cal(method, sel, tg=TARGETS):
        x = _calibration(results, method, sel, tg)
        return None if x is None else _est_bias_corrected(x)

    M = min(r["M"] for r in results)
    min_m = int(cfg.get("min_datasets", 100))
    req = {f"at least {min_m} data sets per cell (M={M}): fewer leave coverage within ±0.05 unresolved": M >= min_m}

    def _claim(kind, *args, **kwargs):
        return kind(*args, requires=req, **kwargs)

    claims = []
    for regime, size in (("chain", n_max), ("episodic", T_max)):
        sel = lambda r, regime=regime, size=size: r["regime"] == regime and r["T"] == size and r["behaviour"] == hist  # noqa: E731
        label = f"n={size}" if regime == "chain" else f"T={size}"
        claims.append(_claim(Claim.threshold,
            f"consistency_{regime}",
            f"Bootstrap consistency, {regime} regime, history-dependent behaviour: at the largest data size ({label}) "
            f"the model-based percentile CIs are within {tol:.2f} of nominal coverage.",
            ce, cal("model_percentile", sel), threshold=tol, better="lower",
            baselines={"clt": cal("clt", sel)}))
    for tg, name in (("V", "V^π"), ("Q", "Q^π"), ("Qstar", "Q*")):
        claims.append(_claim(Claim.threshold,
            f"valid_ci_{tg}",
            f"Asymptotically valid CIs for {name}: at the largest data sizes (n={n_max}, T={T_max}; all behaviours) "
            f"the model-based percentile CIs are within {tol:.2f} of nominal coverage.",
            ce.replace("targets V/Q/Q*", f"target {name}"), cal("model_percentile", largest, (tg,)),
            threshold=tol, better="lower", baselines={"clt": cal("clt", largest, (tg,))}))
    # comparisons: paired over the data-set resamples every method shares (threshold 0 on the difference)
    for cid, statement, sel, base, others in (
            ("percentile_beats_clt_small",
             f"At small n (n={n_min}) and short episodes (T={T_min}) the model-based percentile CIs are better "
             "calibrated than the plug-in CLT CIs.", small, "clt", ("clt", "model_basic", "model_normal")),
            ("percentile_beats_episodic",
             "In the episodic regime the model-based percentile CIs are better calibrated than the episodic bootstrap.",
             episodic, "episodic_percentile", ("episodic_percentile", "episodic_basic", "episodic_normal", "clt"))):
        xm, xb = _calibration(results, "model_percentile", sel), _calibration(results, base, sel)
        claims.append(_claim(Claim.threshold,
            cid, statement,
            f"paired difference model_percentile − {base} of the {ce} over the shared data-set resamples "
            "(basic interval); below 0 = better calibrated",
            _est_paired_difference(xm, xb), threshold=0.0, better="lower",
            baselines={"model_percentile": cal("model_percentile", sel), **{m: cal(m, sel) for m in others}},
            notes=f"method = the difference; baselines = each method's own {ce.split(' (')[0]}"))
    claims.append(_claim(Claim.threshold,
        "percentile_near_nominal",
        f"Over all cells the model-based percentile CIs are near nominal (within {tol:.2f}).",
        ce, cal("model_percentile", every), threshold=tol, better="lower",
        baselines={m: cal(m, every) for m in ("clt", "model_basic", "model_normal")}))
    claims.append(_claim(Claim.threshold,
        "clt_poor_small",
        f"The plug-in CLT is poorly calibrated (off nominal by more than {tol:.2f}) at n={n_min} and T={T_min}.",
        ce, cal("clt", small), threshold=tol, better="higher"))
    claims.append(_claim(Claim.threshold,
        "episodic_poor_short",
        f"The episodic bootstrap is poorly calibrated (off nominal by more than {tol:.2f}) at T={T_min}.",
        ce, cal("episodic_percentile", lambda r: episodic(r) and r["T"] == T_min), threshold=tol, better="higher"))
    for cid, tg, lev, sel, where, quoted in (
            ("qpi_1_0_cov95", "Q", 0.95, every, "all cells", "0.947"),
            ("qstar_1_0_shortT_cov95", "Qstar", 0.95, lambda r: episodic(r) and r["T"] == T_min, f"T={T_min}", "0.899 at T=10"),
            ("qstar_1_0_longT_cov90", "Qstar", 0.90, lambda r: episodic(r) and r["T"] == T_max, f"T={T_max}", "0.913 at T=50")):
        if lev not in levels:
            continue
        x = _entry_coverage(results, "model_percentile", sel, tg, lev, 1, 0)
        if x is None:
            continue
        base = _entry_coverage(results, "clt", sel, tg, lev, 1, 0)
        claims.append(_claim(Claim.within,
            cid, f"Coverage of the model-based percentile CI for {'Q^π' if tg == 'Q' else 'Q*'}(1,0) at {lev:.0%} "
                 f"({where}) is near nominal (within ±{tol:.2f} of {lev:.2f}; the paper is quoted at {quoted}).",
            f"coverage at {lev:.0%}", _est(x), target=lev, tol=tol,
            baselines={} if base is None else {"clt": _est(base)}))
    return claims
