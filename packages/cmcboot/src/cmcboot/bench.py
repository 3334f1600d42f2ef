"""The speed bench: the vectorised model-based bootstrap against a per-replicate Python loop.

Both compute the same ``B`` replicates of ``V^π`` on the same data set, with the same reduction to
the states the replicates can reach (:func:`cmcboot.bootstrap.reduced_bootstrap_counts`) and the
same exact reduced solve (:func:`cmcboot.bootstrap.reduced_policy_values`); they differ only in how
the replicate chains are simulated and counted: all ``B`` chains in one NumPy step, or one replicate
at a time in plain Python. Timed with :func:`paperworks.bench.compare` (interleaved rounds, CPU time
beside wall time, pinned threads); peak memory with :func:`paperworks.bench.peak_memory` in a fresh
process.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from functools import partial
from pathlib import Path

import numpy as np

from cmcboot.baselines import delta_method, episodic_bootstrap_counts, loop_bootstrap_counts
from cmcboot.bootstrap import (
    estimate_behaviour,
    estimate_kernel,
    reachable_states,
    reduced_bootstrap_counts,
    reduced_policy_values,
    reduced_qstar,
    simulate_counts,
)
from cmcboot.data import riverswim_behaviours, simulate_datasets
from cmcboot.envs import riverswim
from cmcboot.mdp import policy_evaluation, value_iteration
from paperworks import Claim, seeds_of
from paperworks.bench import compare, peak_memory

log = logging.getLogger(__name__)


def bench_data(S, n, seed, bias):
    """One RiverSwim chain of ``n`` steps (mostly-right behaviour from cell 0): ``(P̂, π̂_b, R, start)``."""
    P, R = riverswim(S)
    beh = riverswim_behaviours(S, bias)["mostly_right"]
    rng = np.random.default_rng(seed)
    data = simulate_datasets(P, beh, n_datasets=1, n_episodes=1, length=n, initial=np.eye(S)[0], rng=rng)[0, 0]
    counts = np.zeros((S, 2, S), dtype=np.int64)
    np.add.at(counts, (data[:, 0], data[:, 1], data[:, 2]), 1)
    P_hat, _ = estimate_kernel(counts)
    return P_hat, estimate_behaviour(counts), R, int(data[0, 0])


def vectorised(P_hat, pi_b, R, start, n, B, seed, gamma, pi):
    """B replicates of V^π, all chains at once."""
    rng = np.random.default_rng(seed)
    c, support = reduced_bootstrap_counts(P_hat, pi_b, [start], [n], B, rng)
    return reduced_policy_values(c, support, R, pi, gamma)[0]


def vectorised_qstar(P_hat, pi_b, R, start, n, B, seed, gamma):
    """B replicates of Q*: the same replicates, policy iteration on the reduced solve."""
    rng = np.random.default_rng(seed)
    c, support = reduced_bootstrap_counts(P_hat, pi_b, [start], [n], B, rng)
    return reduced_qstar(c, support, R, gamma, q0=value_iteration(P_hat, R, gamma))


def loop(P_hat, pi_b, R, start, n, B, seed, gamma, pi):
    """B replicates of V^π, one replicate at a time (walk, count and solve per replicate)."""
    rng = np.random.default_rng(seed)
    support = np.flatnonzero(reachable_states(P_hat, pi_b, [start]))
    index = {int(s): i for i, s in enumerate(support)}
    Pc, pic = P_hat[support][:, :, support], pi_b[support]
    c = loop_bootstrap_counts(Pc, pic, [index[start]], [n], B, rng)     # a Python loop over replicates and steps
    out = np.empty((B, P_hat.shape[0]))
    for b in range(B):
        out[b] = reduced_policy_values(c[b:b + 1], support, R, pi, gamma)[0][0]
    return out


def _memory(fn, S, n, B, seed, gamma, bias):
    P_hat, pi_b, R, start = bench_data(S, n, seed, bias)
    fn(P_hat, pi_b, R, start, n, B, seed, gamma, np.full((S, 2), 0.5))


def _cycling(fn, args_list):
    """A zero-argument candidate that takes the next data set at each call (every candidate is called
    once per round, so the candidates of one round share their data set)."""
    it = itertools.cycle(args_list)
    return lambda: fn(*next(it))


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    n, B, gamma = int(cfg.n), int(cfg.n_boot), float(cfg.gamma)
    reps, warmup, threads = int(cfg.bench_repeats), int(cfg.bench_warmup), cfg.get("threads")
    bias = float(cfg.behaviour_bias)
    S0 = int(cfg.env.n_states)
    claims, rows = [], []

    def speed_claim(cid, S, res, threshold, rounds_note):
        speed = res.speedup("vectorised", over="loop", kind="cpu")
        wall = res.speedup("vectorised", over="loop", kind="wall")
        log.info("S=%d: vectorised %.3f s CPU, loop %.2f s CPU: %.1fx (wall %.1fx)", S, res.median("vectorised", "cpu"),
                 res.median("loop", "cpu"), speed.value, wall.value)
        rows.extend({"part": "speedup", "n_states": S, "n": n, "n_boot": B, **r} for r in res.rows())
        rows.append({"part": "speedup", "n_states": S, "n": n, "n_boot": B, "loop_over_vectorised_cpu": speed.value,
                     "loop_over_vectorised_wall": wall.value})
        return Claim.threshold(
            cid, f"The vectorised bootstrap is at least {threshold:g}x faster than a per-replicate Python loop at "
                 f"B={B} on RiverSwim with {S} states and n={n}.",
            f"loop CPU time / vectorised CPU time of B={B} replicates of V^π: median of the paired ratios over "
            f"{res.repeats} interleaved rounds ({rounds_note}), bootstrap 95% CI; threads={res.threads}",
            speed, threshold=threshold, better="higher",
            baselines={"vectorised_cpu_s": res.time("vectorised", "cpu"), "loop_cpu_s": res.time("loop", "cpu")},
            notes=f"CPU time of the single-threaded process (the machine is shared, wall time also counts waiting); "
                  f"wall-time ratio {wall.value:.3g}x [{wall.lower:.3g}, {wall.upper:.3g}].")

    # S0 (the paper's 6 states): one data set per seed, cycled through the rounds
    sets = []
    for seed in seeds:
        P_hat, pi_b, R, start = bench_data(S0, n, seed, bias)
        sets.append((P_hat, pi_b, R, start, n, B, seed, gamma, np.full((S0, 2), 0.5)))
    res = compare({"vectorised": _cycling(vectorised, sets), "loop": _cycling(loop, sets)},
                  repeats=reps, warmup=warmup, threads=threads)
    claims.append(speed_claim("vectorised_speedup", S0, res, float(cfg.speedup_threshold), "one data set per seed, cycled"))
    # growth with the number of states: the same comparison at every size, B replicates for both
    for S in (int(s) for s in cfg.states):
        P_hat, pi_b, R, start = bench_data(S, n, seeds[0] + 1000 * S, bias)
        pi = np.full((S, 2), 0.5)
        args = (P_hat, pi_b, R, start, n, B, seeds[0], gamma, pi)
        g = compare({"vectorised": partial(vectorised, *args), "loop": partial(loop, *args)},
                    repeats=int(cfg.growth_repeats), warmup=0, threads=threads)
        claims.append(speed_claim(f"vectorised_speedup_S{S}", S, g, float(cfg.speedup_threshold_states),
                                  "one data set"))
        c0 = time.process_time()
        vectorised_qstar(P_hat, pi_b, R, start, n, B, seeds[0], gamma)
        tq = time.process_time() - c0
        support = int(reachable_states(P_hat, pi_b, [start]).sum())
        mem = {}
        if cfg.get("bench_memory", True):
            for name, fn in (("vectorised", vectorised), ("loop", loop)):
                mem[name] = peak_memory(_memory, fn, S, n, B, seeds[0] + 1000 * S, gamma, bias).mib
        rows.append({"part": "states", "n_states": S, "reached_states": support, "n": n, "n_boot": B,
                     "vectorised_cpu_s": g.median("vectorised", "cpu"), "loop_cpu_s": g.median("loop", "cpu"),
                     "loop_over_vectorised": g.speedup("vectorised", over="loop", kind="cpu").value,
                     "vectorised_qstar_cpu_s": tq, "vectorised_peak_mib": mem.get("vectorised", math.nan),
                     "loop_peak_mib": mem.get("loop", math.nan)})
        log.info("S=%d (%d reachable): Q* %.2f s CPU, peak memory %s", S, support, tq, mem)
    # the baselines' cost on episodic data of the same size (K episodes of T steps, n = K·T)
    rng = np.random.default_rng([seeds[0], 7])
    P, R = riverswim(S0)
    pi0 = np.full((S0, 2), 0.5)
    beh = riverswim_behaviours(S0, bias)["history"]
    T = int(cfg.bench_episode_length)
    K = max(2, n // T)
    data = simulate_datasets(P, beh, n_datasets=1, n_episodes=K, length=T, initial=np.full(S0, 1.0 / S0), rng=rng)
    S_, A_ = S0, 2
    code = (data[..., 0] * A_ + data[..., 1]) * S_ + data[..., 2]
    ep = np.stack([np.bincount(c, minlength=S_ * A_ * S_) for c in code[0]]).reshape(1, K, S_, A_, S_)
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

    def plots(out_dir: Path) -> None:
        from cmcboot.plot import plot_bench

        plot_bench([r for r in rows if r["part"] == "states"], Path(out_dir) / "bench_states.png")

    return {"claims": claims, "metrics": rows, "seeds": seeds, "plots": plots,
            "timings": {f"{k}_cpu_median_s": base.median(k, "cpu") for k in base.cpu}}
