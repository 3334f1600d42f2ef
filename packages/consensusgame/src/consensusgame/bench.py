"""``bench``: environment throughput and policy-update time against N and edges.

Everything under ``jit`` on the run's device; compile time (the first call) is measured apart from
the steady-state time, which :func:`paperworks.bench.compare` takes interleaved with the baseline
(JAX, NumPy, NumPy, JAX, ...; medians of wall and CPU time, paired ratios with a bootstrap CI).
The baseline is the vectorised NumPy/SciPy-sparse implementation in :mod:`consensusgame.reference`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from paperworks import Claim, Estimate
from paperworks.bench import compare
from paperworks.metrics import loglog_slope

log = logging.getLogger(__name__)


def _env_fn(env, episodes):
    import jax

    from consensusgame.baselines import make_baseline
    from consensusgame.metrics import rollout

    pol = make_baseline("random", env)

    @jax.jit
    def fn(key):
        tr = jax.vmap(lambda k: rollout(env, pol, k))(jax.random.split(key, episodes))
        return tr["reward"].mean()

    return fn


def _compile(fn, arg) -> float:
    """Seconds of the first call (trace + XLA compile + one run)."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(arg))
    return time.perf_counter() - t0


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    import jax

    from consensusgame.game import ConsensusGame
    from consensusgame.graphs import barabasi_albert
    from consensusgame.ippo import PPOConfig, make_train
    from consensusgame.reference import random_episodes

    b = cfg.bench
    rows, env_pts, speedups = [], [], {}
    episodes, rounds, k = int(b.episodes), int(cfg.rounds), int(cfg.n_options)
    repeats, threads = int(b.repeats), cfg.get("threads", None) or 1
    sizes = [(int(n), int(b.m)) for n in b.n_values] + [(int(b.n_values[-1]), int(m)) for m in b.extra_m]
    for n, m in sizes:
        graph = barabasi_albert(n, m, seed=int(cfg.graph_seed))
        env = ConsensusGame(graph, n_options=k, signal_accuracy=float(cfg.signal_accuracy), conformity=0.5,
                            rounds=rounds)
        fn, key = _env_fn(env, episodes), jax.random.key(0)
        comp = _compile(fn, key)
        seeds = iter(range(10**6))
        res = compare({
            "jax": lambda fn=fn, key=key: jax.block_until_ready(fn(key)),
            "numpy": lambda g=graph, seeds=seeds: random_episodes(
                g, episodes=episodes, n_options=k, rounds=rounds, conformity=0.5,
                signal_accuracy=float(cfg.signal_accuracy), rng=np.random.default_rng(next(seeds))),
        }, repeats=repeats, warmup=1, threads=threads)
        agent_steps = episodes * rounds * n
        jax_s, np_s = res.median("jax"), res.median("numpy")
        speedups[(n, m)] = res
        row = {"kind": "env", "n_nodes": n, "m": m, "edges": graph.n_edges, "compile_s": comp,
               "step_s": jax_s / rounds, "agent_steps_per_s": agent_steps / jax_s,
               "numpy_agent_steps_per_s": agent_steps / np_s,
               "jax_cpu_s": res.median("jax", "cpu"), "numpy_cpu_s": res.median("numpy", "cpu"),
               "speedup_vs_numpy": res.speedup("jax", over="numpy").value,
               "cpu_speedup_vs_numpy": res.speedup("jax", over="numpy", kind="cpu").value}
        rows.append(row)
        rows += [{"kind": "timing", "n_nodes": n, "m": m, **r} for r in res.rows()]
        env_pts.append((graph.n_edges, jax_s / rounds))
        log.info("env N=%d m=%d E=%d: compile %.2f s, %.3g agent-steps/s (numpy %.3g), speed-up %.2f", n, m,
                 graph.n_edges, comp, row["agent_steps_per_s"], row["numpy_agent_steps_per_s"], row["speedup_vs_numpy"])
    for n in b.update_n_values:
        graph = barabasi_albert(int(n), int(b.m), seed=int(cfg.graph_seed))
        env = ConsensusGame(graph, n_options=k, signal_accuracy=float(cfg.signal_accuracy), conformity=0.5,
                            rounds=rounds)
        ppo = PPOConfig(num_envs=int(b.update_envs), num_updates=1, hidden=int(cfg.ppo.hidden),
                        epochs=int(cfg.ppo.epochs), minibatches=int(cfg.ppo.minibatches))
        train = jax.jit(make_train(env, ppo))

        def one_update(key, train=train, params=env.default_params):
            return train(key, params, True)[1]

        key = jax.random.key(0)
        comp = _compile(one_update, key)
        res = compare({"ppo_update": lambda f=one_update, key=key: jax.block_until_ready(f(key))},
                      repeats=int(b.update_repeats), warmup=0, threads=threads)
        rows.append({"kind": "update", "n_nodes": int(n), "m": int(b.m), "edges": graph.n_edges, "compile_s": comp,
                     "update_s": res.median("ppo_update"), "update_cpu_s": res.median("ppo_update", "cpu"),
                     "samples_per_update": int(b.update_envs) * rounds * int(n)})
        log.info("update N=%d: compile %.2f s, %.3f s per PPO update", n, comp, res.median("ppo_update"))

    # a new game of the same size: one compiled training serves it (graph and conformity are traced
    # parameters), against what 0.1 did for every new game object (trace and compile a fresh training)
    from consensusgame.ippo import _compiled, train_ippo

    n_re = int(b.update_n_values[0])
    games = [ConsensusGame(barabasi_albert(n_re, int(b.m), seed=int(cfg.graph_seed) + 100 + i), n_options=k,
                           signal_accuracy=float(cfg.signal_accuracy), conformity=c, rounds=rounds)
             for i, c in enumerate((0.5, 0.9, 0.2))]
    small = dict(num_envs=int(b.update_envs), num_updates=2, hidden=int(cfg.ppo.hidden), epochs=int(cfg.ppo.epochs),
                 minibatches=int(cfg.ppo.minibatches))
    t0 = time.perf_counter()
    train_ippo(games[0], **small)
    first_s = time.perf_counter() - t0
    fn = _compiled(games[0], PPOConfig(**small))
    n_programs = fn._cache_size()
    t0 = time.perf_counter()
    train_ippo(games[1], **small)
    reuse_s = time.perf_counter() - t0
    fresh = jax.jit(make_train(games[2], PPOConfig(**small)))
    t0 = time.perf_counter()
    jax.block_until_ready(fresh(jax.random.key(0), games[2].default_params, True))
    fresh_s = time.perf_counter() - t0
    recompiled = fn._cache_size() - n_programs
    rows.append({"kind": "reuse", "n_nodes": n_re, "m": int(b.m), "first_game_s": first_s, "new_graph_s": reuse_s,
                 "fresh_compile_s": fresh_s, "programs_added": recompiled})
    log.info("new graph of N=%d: %.2f s through the shared program (first game %.2f s, a fresh compile %.2f s)",
             n_re, reuse_s, first_s, fresh_s)

    # cost growth: per-round time (median over interleaved repeats) against edges, log-log slope with a t-interval
    edges = np.array([e for e, _ in env_pts], float)
    per_round = np.array([t for _, t in env_pts])
    slope, se = loglog_slope(edges, per_round)
    from scipy import stats as st

    h = float(st.t.ppf(0.975, len(edges) - 2) * se) if len(edges) > 2 else float("nan")
    slope_est = (Estimate(slope, slope - h, slope + h, len(edges), 0.95, "t (regression slope)")
                 if np.isfinite(h) else slope)
    n_big, m0 = int(b.n_values[-1]), int(b.m)
    big = speedups[(n_big, m0)]
    wall, cpu = big.speedup("jax", over="numpy"), big.speedup("jax", over="numpy", kind="cpu")
    claims = [
        Claim.threshold(
            "env_cost_linear_in_edges",
            "The game's cost grows no worse than linearly in the number of edges (jit, N up to "
            f"{n_big}).", "log-log slope of time per round (all parallel episodes) vs edges, BA graphs", slope_est,
            threshold=1.0, better="lower"),
        Claim.threshold(
            "env_scales_to_1000_agents",
            f"The jitted JAX game runs {n_big} agents faster than the same game vectorised in NumPy/SciPy-sparse.",
            f"speed-up (wall) over numpy/scipy.sparse, N={n_big}, {episodes} parallel episodes, device "
            f"{cfg.get('device', 'cpu')} (median of {repeats} interleaved paired ratios)",
            wall, threshold=1.0, better="higher", baselines={"CPU-time speed-up": cpu},
            notes="XLA's thread pool is not pinned (JAX is imported before the glue sets threads); the CPU-time "
                  "ratio counts every thread's time"),
        Claim.check(
            "new_graph_reuses_compiled_training",
            "Training on a new game with another graph of the same size and another conformity adds no compiled "
            "program (the graph and the conformity are traced parameters).",
            f"programs added to the shared training's cache by a second game, BA N={n_re}; "
            f"{reuse_s:.2f} s for it vs {fresh_s:.2f} s for a freshly compiled training", float(recompiled),
            target=0.0, tol=0.0),
    ]

    def plots(out_dir):
        from consensusgame import plot

        plot.plot_bench([r for r in rows if r["kind"] != "timing"], out_dir / "bench_scaling.png")

    return {"claims": claims, "metrics": rows, "extra": {"slope": slope, "slope_se": se}, "plots": plots}
