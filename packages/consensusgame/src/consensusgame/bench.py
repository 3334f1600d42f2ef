"""``bench``: environment throughput and policy-update time against N and edges.

Everything under ``jit`` on the run's device; compile time is measured separately from the
steady-state time (the best of ``repeats`` timed calls after one warm-up). The baseline is the
vectorised NumPy/SciPy-sparse implementation in :mod:`consensusgame.reference`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from paperworks import Claim, estimate
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


def _time(fn, arg, repeats):
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(arg))
    compile_s = time.perf_counter() - t0
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(arg))
        ts.append(time.perf_counter() - t0)
    return compile_s, np.asarray(ts)


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    import jax

    from consensusgame.game import ConsensusGame
    from consensusgame.graphs import barabasi_albert
    from consensusgame.ippo import PPOConfig, make_train
    from consensusgame.reference import random_episodes

    b = cfg.bench
    rows, env_pts = [], []
    episodes, rounds, k = int(b.episodes), int(cfg.rounds), int(cfg.n_options)
    sizes = [(int(n), int(b.m)) for n in b.n_values] + [(int(b.n_values[-1]), int(m)) for m in b.extra_m]
    for n, m in sizes:
        graph = barabasi_albert(n, m, seed=int(cfg.graph_seed))
        env = ConsensusGame(graph, n_options=k, signal_accuracy=float(cfg.signal_accuracy), conformity=0.5,
                            rounds=rounds)
        comp, ts = _time(_env_fn(env, episodes), jax.random.key(0), int(b.repeats))
        agent_steps = episodes * rounds * n
        np_ts = []
        for r in range(int(b.repeats)):
            t0 = time.perf_counter()
            random_episodes(graph, episodes=episodes, n_options=k, rounds=rounds, conformity=0.5,
                            signal_accuracy=float(cfg.signal_accuracy), rng=np.random.default_rng(r))
            np_ts.append(time.perf_counter() - t0)
        np_rate = agent_steps / float(np.min(np_ts))
        row = {"kind": "env", "n_nodes": n, "m": m, "edges": graph.n_edges, "compile_s": comp,
               "step_s": float(ts.min()) / rounds, "agent_steps_per_s": agent_steps / float(ts.min()),
               "agent_steps_per_s_median": agent_steps / float(np.median(ts)), "numpy_agent_steps_per_s": np_rate,
               "speedup_vs_numpy": agent_steps / float(ts.min()) / np_rate}
        rows.append(row)
        env_pts.append((graph.n_edges, ts))
        log.info("env N=%d m=%d E=%d: compile %.2f s, %.3g agent-steps/s (numpy %.3g)", n, m, graph.n_edges, comp,
                 row["agent_steps_per_s"], np_rate)
    for n in b.update_n_values:
        graph = barabasi_albert(int(n), int(b.m), seed=int(cfg.graph_seed))
        env = ConsensusGame(graph, n_options=k, signal_accuracy=float(cfg.signal_accuracy), conformity=0.5,
                            rounds=rounds)
        ppo = PPOConfig(num_envs=int(b.update_envs), num_updates=1, hidden=int(cfg.ppo.hidden),
                        epochs=int(cfg.ppo.epochs), minibatches=int(cfg.ppo.minibatches))
        train = jax.jit(make_train(env, ppo))

        def one_update(key, train=train, params=env.default_params):
            return train(key, params, True)[1]

        comp, ts = _time(one_update, jax.random.key(0), int(b.update_repeats))
        rows.append({"kind": "update", "n_nodes": int(n), "m": int(b.m), "edges": graph.n_edges, "compile_s": comp,
                     "update_s": float(ts.min()), "samples_per_update": int(b.update_envs) * rounds * int(n)})
        log.info("update N=%d: compile %.2f s, %.3f s per PPO update", n, comp, float(ts.min()))

    # cost growth: per-round time against edges over every graph (log-log slope, t-interval)
    edges = np.array([e for e, _ in env_pts], float)
    per_round = np.array([ts.min() / rounds for _, ts in env_pts])
    slope, se = loglog_slope(edges, per_round)
    from scipy import stats as st

    h = float(st.t.ppf(0.975, len(edges) - 2) * se) if len(edges) > 2 else float("nan")
    slope_est = {"value": slope, "lower": slope - h, "upper": slope + h, "n": len(edges), "level": 0.95,
                 "method": "t (regression slope)"} if np.isfinite(h) else slope
    big = env_pts[len(b.n_values) - 1][1]
    n_big = int(b.n_values[-1])
    rate = estimate(episodes * rounds * n_big / big)
    np_big = rows[len(b.n_values) - 1]["numpy_agent_steps_per_s"]
    # note: the JAX rate carries a t-interval over the timed repeats; NumPy's is its best repeat
    claims = [
        Claim.threshold(
            "env_cost_linear_in_edges",
            "The game's cost grows no worse than linearly in the number of edges (jit, N up to "
            f"{n_big}).", "log-log slope of time per round (all parallel episodes) vs edges, BA graphs", slope_est, threshold=1.0, better="lower"),
        Claim.compare(
            "env_scales_to_1000_agents",
            f"The jitted JAX game runs {n_big} agents faster than the same game vectorised in NumPy/SciPy-sparse.",
            f"agent-steps per second, N={n_big}, {episodes} parallel episodes, device {cfg.get('device', 'cpu')}",
            rate, baseline="numpy/scipy.sparse", baselines={"numpy/scipy.sparse": float(np_big)}, better="higher"),
    ]
    if out_dir is not None:
        try:
            from consensusgame import plot
        except ImportError:
            log.warning("matplotlib is not installed: no plots")
        else:
            plot.plot_bench(rows, out_dir / "bench_scaling.png")
    return {"claims": claims, "metrics": rows, "extra": {"slope": slope, "slope_se": se}}
