"""``run(cfg) -> dict``: the RiverSwim coverage study (smoke/quick/paper) and the speed bench.

Coverage study: for every behaviour × data regime ("cell") draw ``M`` data sets from the true
RiverSwim, build every method's intervals for ``V^π``, ``Q^π`` and ``Q*`` at each level, and record
whether they cover the exact truth. Methods: the model-based bootstrap (percentile, basic, normal),
the episodic bootstrap (percentile, basic, normal; episodic cells only) and the plug-in CLT. All
bootstraps get the same ``B``. The claims' intervals come from resampling the ``M`` data sets of
each cell (paired across methods).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from cmcboot.baselines import delta_method, episodic_bootstrap_counts, loop_bootstrap_counts
from cmcboot.bootstrap import confidence_intervals, estimate_behaviour, estimate_kernel, simulate_counts
from cmcboot.data import riverswim_behaviours, simulate_datasets
from cmcboot.envs import riverswim
from cmcboot.mdp import policy_evaluation, targets, tie_mask, value_iteration
from paperworks import Claim, Estimate, estimate, seeds_of

log = logging.getLogger(__name__)
TARGETS = ("V", "Q", "Qstar")
BOOT_CI = ("percentile", "basic", "normal")


def run(cfg, out_dir: Path | None = None) -> dict:
    # many tiny matrix products: a multi-threaded BLAS only fights over the cores
    with threadpool_limits(limits=int(cfg.get("blas_threads", 1)), user_api="blas"):
        if str(cfg.get("mode", "coverage")) == "bench":
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
    extra = {"unvisited_rate": float(empty.mean()), "argmax_flip": None}
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
    cells = _cells(cfg)
    results, t_cells = [], {}
    t0 = time.perf_counter()
    for cell in tqdm(cells, desc="cells", disable=None):
        tc = time.perf_counter()
        ind, wid, flips, unvis = {}, {}, [], []
        chunk = max(1, int(cfg.max_width) // (n_boot * cell["K"]))
        for seed in seeds:
            rng = np.random.default_rng([seed, cells.index(cell)])
            for start in range(0, per_seed, chunk):
                n_d = min(chunk, per_seed - start)
                o, w, ex = _chunk_cell(cell, P, R, gamma, pi, truth, behaviours[cell["behaviour"]],
                                       chain_init if cell["regime"] == "chain" else epi_init, n_d, n_boot, levels, rng)
                for k in o:
                    ind.setdefault(k, []).append(o[k])
                    wid.setdefault(k, []).append(w[k])
                flips.append(ex["argmax_flip"] * n_d)
                unvis.append(ex["unvisited_rate"] * n_d)
        M = per_seed * len(seeds)
        results.append({**cell, "M": M, "ind": {k: np.concatenate(v) for k, v in ind.items()},
                        "width": {k: np.concatenate(v).mean(0) for k, v in wid.items()},
                        "argmax_flip": np.sum(flips, 0) / M, "unvisited_rate": float(np.sum(unvis) / M)})
        t_cells[f"{cell['behaviour']}_{cell['size']}_s"] = time.perf_counter() - tc
        log.info("cell %s %s done in %.1f s", cell["behaviour"], cell["size"], t_cells[f"{cell['behaviour']}_{cell['size']}_s"])
    t_sim = time.perf_counter() - t0

    # paired resampling of the data sets of each cell, for the claims' intervals
    n_res = int(cfg.claim_resamples)
    crng = np.random.default_rng([seeds[0], 99])
    for res in results:
        W = crng.multinomial(res["M"], np.full(res["M"], 1.0 / res["M"]), size=n_res) / res["M"]
        W = np.vstack([np.full((1, res["M"]), 1.0 / res["M"]), W])  # row 0: the data as observed
        res["cov"] = {k: W @ v.astype(float) for k, v in res["ind"].items()}

    metrics = _metrics_rows(results, truth, levels)
    claims = _claims(cfg, results, levels)
    ties = tie_mask(truth["Qstar"])
    extra = {
        "true_values": {k: v.tolist() for k, v in truth.items()},
        "true_qstar_ties": int(ties.sum()),
        "argmax_flip_rate": {f"{r['behaviour']}_{r['size']}": r["argmax_flip"].tolist() for r in results},
        "unvisited_rate": {f"{r['behaviour']}_{r['size']}": r["unvisited_rate"] for r in results},
        "datasets_per_cell": per_seed * len(seeds), "n_boot": n_boot,
        "conventions": {"unvisited": "uniform P̂(·|s,a)", "evaluated_policy": "uniform random",
                        "rewards": "known (true R)", "chain_start": int(cfg.chain_start),
                        "episode_start": "uniform over states"},
    }
    if out_dir is not None:
        try:
            from cmcboot.plot import plot_coverage
        except ImportError:
            log.warning("matplotlib is not installed: no plots (pip install 'paperworks-cmcboot[plot]')")
        else:
            plot_coverage(metrics, Path(out_dir) / "coverage.png", level=max(levels))
    return {"claims": claims, "metrics": metrics, "seeds": seeds,
            "timings": {"simulation_s": t_sim, **t_cells}, "extra": extra}


def _metrics_rows(results, truth, levels) -> list[dict]:
    rows = []
    for res in results:
        for (method, tg, lev), cov in res["cov"].items():
            c = cov[0]
            t = np.abs(truth[tg]).reshape(-1)
            row = {"behaviour": res["behaviour"], "regime": res["regime"], "size": res["size"], "K": res["K"],
                   "T": res["T"], "method": method, "target": tg, "level": lev, "M": res["M"],
                   "coverage_mean": float(c.mean()), "coverage_min": float(c.min()),
                   "abs_calibration_error": float(np.abs(c - lev).mean()),
                   "coverage_entry_1_0": float(c[1 if tg == "V" else truth[tg].shape[1]]),
                   "rel_width": float(np.mean(res["width"][(method, tg, lev)] / np.maximum(t, 1e-12))),
                   "unvisited_rate": res["unvisited_rate"]}
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

    claims = []
    for regime, size in (("chain", n_max), ("episodic", T_max)):
        sel = lambda r, regime=regime, size=size: r["regime"] == regime and r["T"] == size and r["behaviour"] == hist  # noqa: E731
        label = f"n={size}" if regime == "chain" else f"T={size}"
        claims.append(Claim.threshold(
            f"consistency_{regime}",
            f"Bootstrap consistency, {regime} regime, history-dependent behaviour: at the largest data size ({label}) "
            f"the model-based percentile CIs are within {tol:.2f} of nominal coverage.",
            ce, cal("model_percentile", sel), threshold=tol, better="lower",
            baselines={"clt": cal("clt", sel)}))
    for tg, name in (("V", "V^π"), ("Q", "Q^π"), ("Qstar", "Q*")):
        claims.append(Claim.threshold(
            f"valid_ci_{tg}",
            f"Asymptotically valid CIs for {name}: at the largest data sizes (n={n_max}, T={T_max}; all behaviours) "
            f"the model-based percentile CIs are within {tol:.2f} of nominal coverage.",
            ce.replace("targets V/Q/Q*", f"target {name}"), cal("model_percentile", largest, (tg,)),
            threshold=tol, better="lower", baselines={"clt": cal("clt", largest, (tg,))}))
    bases_small = {m: cal(m, small) for m in ("clt", "model_basic", "model_normal")}
    claims.append(Claim.compare(
        "percentile_beats_clt_small",
        f"At small n (n={n_min}) and short episodes (T={T_min}) the model-based percentile CIs are better "
        "calibrated than the plug-in CLT CIs.",
        ce, cal("model_percentile", small), baseline="clt", baselines=bases_small, better="lower"))
    claims.append(Claim.compare(
        "percentile_beats_episodic",
        "In the episodic regime the model-based percentile CIs are better calibrated than the episodic bootstrap.",
        ce, cal("model_percentile", episodic), baseline="episodic_percentile",
        baselines={m: cal(m, episodic) for m in ("episodic_percentile", "episodic_basic", "episodic_normal", "clt")},
        better="lower"))
    claims.append(Claim.threshold(
        "percentile_near_nominal",
        f"Over all cells the model-based percentile CIs are near nominal (within {tol:.2f}).",
        ce, cal("model_percentile", every), threshold=tol, better="lower",
        baselines={m: cal(m, every) for m in ("clt", "model_basic", "model_normal")}))
    claims.append(Claim.threshold(
        "clt_poor_small",
        f"The plug-in CLT is poorly calibrated (off nominal by more than {tol:.2f}) at n={n_min} and T={T_min}.",
        ce, cal("clt", small), threshold=tol, better="higher"))
    claims.append(Claim.threshold(
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
        claims.append(Claim.threshold(
            cid, f"Coverage of the model-based percentile CI for {'Q^π' if tg == 'Q' else 'Q*'}(1,0) at {lev:.0%} "
                 f"({where}) is near nominal (≥ {lev - tol:.2f}; the paper is quoted at {quoted}).",
            f"coverage at {lev:.0%}", _est(x), threshold=lev - tol, better="higher",
            baselines={} if base is None else {"clt": _est(base)}))
    return claims


# the bench ------------------------------------------------------------------------------------

def _bench_data(S, n, rng, bias):
    P, R = riverswim(S)
    beh = riverswim_behaviours(S, bias)["mostly_right"]
    data = simulate_datasets(P, beh, n_datasets=1, n_episodes=1, length=n, initial=np.eye(S)[0], rng=rng)[0, 0]
    counts = np.zeros((S, 2, S), dtype=np.int64)
    np.add.at(counts, (data[:, 0], data[:, 1], data[:, 2]), 1)
    P_hat, _ = estimate_kernel(counts)
    return P_hat, estimate_behaviour(counts), R, data


def _time_vectorised(P_hat, pi_b, R, start, n, B, rng, gamma, pi):
    """(CPU seconds, wall seconds) of B replicates of V^π, all chains at once."""
    t, w = time.process_time(), time.perf_counter()
    c = simulate_counts(P_hat[None], pi_b[None], np.array([[start]]), np.array([n]), B, rng)[0]
    Pb, _ = estimate_kernel(c)
    policy_evaluation(Pb, R, pi, gamma)
    return time.process_time() - t, time.perf_counter() - w


def _time_loop(P_hat, pi_b, R, start, n, B, rng, gamma, pi):
    """(CPU seconds, wall seconds) of B replicates of V^π, one replicate at a time."""
    t, w = time.process_time(), time.perf_counter()
    c = loop_bootstrap_counts(P_hat, pi_b, [start], [n], B, rng)
    for b in range(B):
        Pb, _ = estimate_kernel(c[b])
        policy_evaluation(Pb, R, pi, gamma)
    return time.process_time() - t, time.perf_counter() - w


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    n, B, gamma = int(cfg.n), int(cfg.n_boot), float(cfg.gamma)
    rows, ratios, t_vec, t_loop = [], [], [], []
    S0 = int(cfg.env.n_states)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        P_hat, pi_b, R, data = _bench_data(S0, n, rng, float(cfg.behaviour_bias))
        pi = np.full((S0, 2), 0.5)
        tv, wv = _time_vectorised(P_hat, pi_b, R, int(data[0, 0]), n, B, rng, gamma, pi)
        tl, wl = _time_loop(P_hat, pi_b, R, int(data[0, 0]), n, B, rng, gamma, pi)
        t_vec.append(tv)
        t_loop.append(tl)
        ratios.append(tl / tv)
        rows.append({"part": "speedup", "seed": seed, "n_states": S0, "n": n, "n_boot": B,
                     "vectorised_cpu_s": tv, "loop_cpu_s": tl, "loop_over_vectorised": tl / tv,
                     "vectorised_wall_s": wv, "loop_wall_s": wl, "loop_over_vectorised_wall": wl / wv})
        log.info("seed %d: vectorised %.2f s CPU (%.2f wall), loop %.2f s CPU (%.2f wall): %.1fx", seed, tv, wv, tl,
                 wl, tl / tv)
    # growth with the number of states (vectorised at B; loop at loop_boot replicates, per replicate)
    Bl = int(cfg.loop_boot_growth)
    for S in cfg.states:
        rng = np.random.default_rng([seeds[0], int(S)])
        P_hat, pi_b, R, data = _bench_data(int(S), n, rng, float(cfg.behaviour_bias))
        pi = np.full((int(S), 2), 0.5)
        tv, _ = _time_vectorised(P_hat, pi_b, R, int(data[0, 0]), n, B, rng, gamma, pi)
        tq = time.process_time()
        c = simulate_counts(P_hat[None], pi_b[None], np.array([[int(data[0, 0])]]), np.array([n]), B, rng)[0]
        value_iteration(estimate_kernel(c)[0], R, gamma)
        tq = time.process_time() - tq
        tl, _ = _time_loop(P_hat, pi_b, R, int(data[0, 0]), n, Bl, rng, gamma, pi)
        rows.append({"part": "states", "n_states": int(S), "n": n, "n_boot": B, "vectorised_cpu_s": tv,
                     "vectorised_with_qstar_cpu_s": tq, "loop_per_replicate_cpu_s": tl / Bl,
                     "loop_over_vectorised": (tl / Bl) / (tv / B)})
        log.info("S=%d: vectorised %.2f s CPU (with Q* %.2f s), loop %.4f s/replicate", S, tv, tq, tl / Bl)
    # the baselines' cost on episodic data of the same size (K episodes of T steps, n = K·T)
    rng = np.random.default_rng([seeds[0], 7])
    P, R = riverswim(S0)
    beh = riverswim_behaviours(S0, float(cfg.behaviour_bias))["history"]
    T = int(cfg.bench_episode_length)
    K = max(2, n // T)
    data = simulate_datasets(P, beh, n_datasets=1, n_episodes=K, length=T, initial=np.full(S0, 1.0 / S0), rng=rng)
    ep = _episode_counts(data, S0, 2)
    counts = ep.sum(1)
    P_hat, _ = estimate_kernel(counts)
    pi = np.full((S0, 2), 0.5)
    timings = {}
    t = time.process_time()
    c = simulate_counts(P_hat, estimate_behaviour(counts), data[:, :, 0, 0], np.full(K, T), B, rng, resample_starts=True)
    policy_evaluation(estimate_kernel(c)[0], R, pi, gamma)
    timings["model_bootstrap_episodic_s"] = time.process_time() - t
    t = time.process_time()
    c = episodic_bootstrap_counts(ep, B, rng)
    policy_evaluation(estimate_kernel(c)[0], R, pi, gamma)
    timings["episodic_bootstrap_s"] = time.process_time() - t
    t = time.process_time()
    delta_method(P_hat, counts.sum(-1), R, gamma, "V", pi)
    timings["plugin_clt_s"] = max(time.process_time() - t, 1e-6)
    rows.append({"part": "baselines", "n_states": S0, "n": K * T, "K": K, "T": T, "n_boot": B, **timings,
                 "model_over_episodic": timings["model_bootstrap_episodic_s"] / timings["episodic_bootstrap_s"],
                 "model_over_clt": timings["model_bootstrap_episodic_s"] / timings["plugin_clt_s"]})
    claims = [Claim.threshold(
        "vectorised_speedup",
        f"The vectorised bootstrap is at least {float(cfg.speedup_threshold):g}x faster than a per-replicate Python "
        f"loop at B={B} on RiverSwim with n={n}.",
        "loop CPU time / vectorised CPU time", estimate(ratios), threshold=float(cfg.speedup_threshold), better="higher",
        baselines={"vectorised_cpu_s": estimate(t_vec), "loop_cpu_s": estimate(t_loop)},
        notes="CPU time of the (single-threaded) process: the machine is shared, so wall time also counts waiting; "
              "wall times are in metrics.csv.")]
    if out_dir is not None:
        try:
            from cmcboot.plot import plot_bench
        except ImportError:
            log.warning("matplotlib is not installed: no plots (pip install 'paperworks-cmcboot[plot]')")
        else:
            plot_bench([r for r in rows if r["part"] == "states"], Path(out_dir) / "bench_states.png")
    return {"claims": claims, "metrics": rows, "seeds": seeds, "timings": timings}
