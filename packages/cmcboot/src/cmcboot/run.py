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
from functools import partial
from pathlib import Path

import numpy as np
from scipy import stats
from tqdm import tqdm

from cmcboot.baselines import delta_method, episodic_bootstrap_counts, loop_bootstrap_counts
from cmcboot.bootstrap import confidence_intervals, estimate_behaviour, estimate_kernel, simulate_counts
from cmcboot.data import riverswim_behaviours, simulate_datasets
from cmcboot.envs import riverswim
from cmcboot.mdp import policy_evaluation, targets, tie_mask, value_iteration
from paperworks import Claim, Estimate, seeds_of
from paperworks.bench import compare

log = logging.getLogger(__name__)
TARGETS = ("V", "Q", "Qstar")
BOOT_CI = ("percentile", "basic", "normal")


def run(cfg, out_dir: Path | None = None) -> dict:
    # BLAS threads: the common ``threads`` key (1: many tiny matrix products, more threads only fight
    # over the cores), pinned once by paperworks before the run
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

    def plots(out_dir: Path) -> None:
        from cmcboot.plot import plot_coverage

        plot_coverage(metrics, Path(out_dir) / "coverage.png", level=max(levels))

    return {"claims": claims, "metrics": metrics, "seeds": seeds,
            "timings": {"simulation_s": t_sim, **t_cells}, "extra": extra, "plots": plots}


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
    # comparisons: paired over the data-set resamples every method shares (threshold 0 on the difference)
    for cid, statement, sel, base, others in (
            ("percentile_beats_clt_small",
             f"At small n (n={n_min}) and short episodes (T={T_min}) the model-based percentile CIs are better "
             "calibrated than the plug-in CLT CIs.", small, "clt", ("clt", "model_basic", "model_normal")),
            ("percentile_beats_episodic",
             "In the episodic regime the model-based percentile CIs are better calibrated than the episodic bootstrap.",
             episodic, "episodic_percentile", ("episodic_percentile", "episodic_basic", "episodic_normal", "clt"))):
        xm, xb = _calibration(results, "model_percentile", sel), _calibration(results, base, sel)
        claims.append(Claim.threshold(
            cid, statement,
            f"paired difference model_percentile − {base} of the {ce} over the shared data-set resamples "
            "(basic interval); below 0 = better calibrated",
            _est_paired_difference(xm, xb), threshold=0.0, better="lower",
            baselines={"model_percentile": cal("model_percentile", sel), **{m: cal(m, sel) for m in others}},
            notes=f"method = the difference; baselines = each method's own {ce.split(' (')[0]}"))
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
        claims.append(Claim.within(
            cid, f"Coverage of the model-based percentile CI for {'Q^π' if tg == 'Q' else 'Q*'}(1,0) at {lev:.0%} "
                 f"({where}) is near nominal (within ±{tol:.2f} of {lev:.2f}; the paper is quoted at {quoted}).",
            f"coverage at {lev:.0%}", _est(x), target=lev, tol=tol,
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
    return P_hat, estimate_behaviour(counts), R, int(data[0, 0])


def _vectorised(P_hat, pi_b, R, start, n, B, seed, gamma, pi, qstar=False):
    """B replicates of V^π (or Q*), all chains at once."""
    rng = np.random.default_rng(seed)
    c = simulate_counts(P_hat[None], pi_b[None], np.array([[start]]), np.array([n]), B, rng)[0]
    Pb, _ = estimate_kernel(c)
    return value_iteration(Pb, R, gamma) if qstar else policy_evaluation(Pb, R, pi, gamma)


def _loop(P_hat, pi_b, R, start, n, B, seed, gamma, pi):
    """B replicates of V^π, one replicate at a time."""
    rng = np.random.default_rng(seed)
    c = loop_bootstrap_counts(P_hat, pi_b, [start], [n], B, rng)
    for b in range(B):
        Pb, _ = estimate_kernel(c[b])
        policy_evaluation(Pb, R, pi, gamma)


def _cycling(fn, args_list):
    """A zero-argument candidate that takes the next data set at each call (every candidate is called
    once per round, so the candidates of one round share their data set)."""
    it = itertools.cycle(args_list)
    return lambda: fn(*next(it))


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    n, B, gamma = int(cfg.n), int(cfg.n_boot), float(cfg.gamma)
    reps, warmup, threads = int(cfg.bench_repeats), int(cfg.bench_warmup), cfg.get("threads")
    S0 = int(cfg.env.n_states)
    pi0 = np.full((S0, 2), 0.5)
    # the claim: vectorised vs the per-replicate loop, one data set per seed, cycled through the rounds
    sets = []
    for seed in seeds:
        P_hat, pi_b, R, start = _bench_data(S0, n, np.random.default_rng(seed), float(cfg.behaviour_bias))
        sets.append((P_hat, pi_b, R, start, n, B, seed, gamma, pi0))
    res = compare({"vectorised": _cycling(_vectorised, sets), "loop": _cycling(_loop, sets)},
                  repeats=reps, warmup=warmup, threads=threads)
    speed = res.speedup("vectorised", over="loop", kind="cpu")
    speed_wall = res.speedup("vectorised", over="loop", kind="wall")
    rows = [{"part": "speedup", "n_states": S0, "n": n, "n_boot": B, **r} for r in res.rows()]
    rows.append({"part": "speedup", "n_states": S0, "n": n, "n_boot": B, "loop_over_vectorised_cpu": speed.value,
                 "loop_over_vectorised_wall": speed_wall.value})
    log.info("vectorised %.2f s CPU, loop %.2f s CPU: %.1fx (wall %.1fx)", res.median("vectorised", "cpu"),
             res.median("loop", "cpu"), speed.value, speed_wall.value)
    # growth with the number of states (vectorised at B; the loop at loop_boot_growth replicates)
    Bl = int(cfg.loop_boot_growth)
    for S in cfg.states:
        S = int(S)
        P_hat, pi_b, R, start = _bench_data(S, n, np.random.default_rng([seeds[0], S]), float(cfg.behaviour_bias))
        pi = np.full((S, 2), 0.5)
        args = (P_hat, pi_b, R, start, n)
        g = compare({"vectorised V^π": partial(_vectorised, *args, B, seeds[0], gamma, pi),
                     "vectorised Q*": partial(_vectorised, *args, B, seeds[0], gamma, pi, qstar=True),
                     "loop V^π": partial(_loop, *args, Bl, seeds[0], gamma, pi)},
                    repeats=int(cfg.growth_repeats), warmup=0, threads=threads)
        tv, tq, tl = (g.median(k, "cpu") for k in ("vectorised V^π", "vectorised Q*", "loop V^π"))
        rows.append({"part": "states", "n_states": S, "n": n, "n_boot": B, "vectorised_cpu_s": tv,
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
    pi_b = estimate_behaviour(counts)

    def model_bootstrap():
        c = simulate_counts(P_hat, pi_b, data[:, :, 0, 0], np.full(K, T), B, rng, resample_starts=True)
        policy_evaluation(estimate_kernel(c)[0], R, pi0, gamma)

    def episodic_bootstrap():
        policy_evaluation(estimate_kernel(episodic_bootstrap_counts(ep, B, rng))[0], R, pi0, gamma)

    base = compare({"model bootstrap (episodic data)": model_bootstrap, "episodic bootstrap": episodic_bootstrap,
                    "plug-in CLT": lambda: delta_method(P_hat, counts.sum(-1), R, gamma, "V", pi0)},
                   repeats=reps, warmup=warmup, threads=threads)
    rows += [{"part": "baselines", "n_states": S0, "n": K * T, "K": K, "T": T, "n_boot": B, **r} for r in base.rows()]
    claims = [Claim.threshold(
        "vectorised_speedup",
        f"The vectorised bootstrap is at least {float(cfg.speedup_threshold):g}x faster than a per-replicate Python "
        f"loop at B={B} on RiverSwim with n={n}.",
        f"loop CPU time / vectorised CPU time: median of the paired ratios over {reps} interleaved rounds "
        f"(one data set per seed, cycled), bootstrap 95% CI; threads={res.threads}",
        speed, threshold=float(cfg.speedup_threshold), better="higher",
        baselines={"vectorised_cpu_s": res.time("vectorised", "cpu"), "loop_cpu_s": res.time("loop", "cpu")},
        notes=f"CPU time of the (single-threaded) process: the machine is shared, so wall time also counts waiting; "
              f"the wall-time ratio is {speed_wall.value:.3g}x [{speed_wall.lower:.3g}, {speed_wall.upper:.3g}].")]

    def plots(out_dir: Path) -> None:
        from cmcboot.plot import plot_bench

        plot_bench([r for r in rows if r["part"] == "states"], Path(out_dir) / "bench_states.png")

    return {"claims": claims, "metrics": rows, "seeds": seeds, "plots": plots,
            "timings": {f"{k}_cpu_median_s": base.median(k, "cpu") for k in base.cpu}}
