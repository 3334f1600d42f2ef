"""``gtp experiment=bench``: planning latency per step and return at equal wall-clock.

Latency: one observation (B = 1), every planner at N ∈ ``bench.n_grid``, interleaved repeats
through :func:`paperworks.bench.compare` (threads pinned). Equal wall-clock: MPPI gets the
largest N in ``bench.equal_time_n`` whose median step time does not exceed GTP's at N = 64, and
both are run on the same Pendulum episodes (paired over episodes, one model set).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from gtp import experiments as ex
from gtp.rollout import evaluate
from gtp.run import _fit
from paperworks import Claim, seeds_of
from paperworks.bench import compare


def run_bench(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    torch.set_num_threads(int(cfg.get("threads") or 1))
    B = cfg.bench
    env_id = cfg.envs[0]
    t0 = time.perf_counter()
    _, m = _fit(cfg, env_id, seeds[0], cfg.data.random_frac, cfg.device)
    fit_s = time.perf_counter() - t0
    obs = np.array([np.cos(2.5), np.sin(2.5), 0.3], np.float32) if env_id == "Pendulum-v1" else np.zeros(
        m.prior.obs_dim, np.float32)
    rows, res_by_n = [], {}
    for n in B.n_grid:
        cands = {}
        for name in B.planners:
            p = ex.make_planner(name, m, int(n), cfg)
            cands[name] = (lambda p=p: p.plan(obs))
        res = compare(cands, repeats=int(B.repeats), warmup=2, threads=int(cfg.get("threads") or 1))
        res_by_n[int(n)] = res
        for r in res.rows():
            rows.append({"kind": "latency", "N": int(n), **r})
    n_hi = int(max(B.n_grid))
    r64 = res_by_n[n_hi]
    gtp_t = r64.time("gtp")
    ratio = r64.speedup("mppi", over="gtp")  # time(GTP) / time(MPPI)
    # equal wall-clock: the largest MPPI N not slower than GTP at n_hi
    planners = {f"mppi{n}": ex.make_planner("mppi", m, int(n), cfg) for n in B.equal_time_n}
    planners["gtp"] = ex.make_planner("gtp", m, n_hi, cfg)
    cands = {k: (lambda p=p: p.plan(obs)) for k, p in planners.items()}
    eq = compare(cands, repeats=int(B.repeats), warmup=1, threads=int(cfg.get("threads") or 1))
    n_eq = max([int(n) for n in B.equal_time_n if eq.median(f"mppi{n}") <= eq.median("gtp")] or [n_hi])
    for r in eq.rows():
        rows.append({"kind": "equal_time", **r})
    ev = {}
    for name, n in (("gtp", n_hi), ("mppi", n_eq)):
        res = evaluate(env_id, ex.make_planner(name, m, n, cfg), episodes=int(B.episodes), seed=777)
        ev[name] = res
        rows.append({"kind": "equal_time_return", "planner": name, "N": n, "mean_return": float(res["returns"].mean()),
                     "plan_ms_batched": res["plan_ms"]})
    claims = [
        Claim.threshold("gtp_step_within_20ms", f"Performance: a GTP planning step at N = {n_hi}, H = "
                        f"{m.prior.horizon}, {m.prior.sample_steps} DDIM steps, a {m.dynamics.members}-member ensemble "
                        f"takes at most 20 ms (≥ 50 Hz) with {r64.threads} thread(s).", "median step time (s)",
                        gtp_t, threshold=0.020, better="lower"),
        Claim.threshold("gtp_within_1.5x_mppi", f"Performance: GTP's step time is at most 1.5× MPPI's at equal "
                        f"N = {n_hi} (paired ratio of interleaved repeats).", "time(GTP) / time(MPPI)", ratio,
                        threshold=1.5, better="lower"),
        Claim.compare("gtp_matches_mppi_at_equal_time", f"At equal wall-clock per step, GTP (N = {n_hi}) is no worse "
                      f"than MPPI given the N that fits the same time (N = {n_eq}) by more than "
                      f"{float(cfg.claims.pendulum_margin):g} return on {env_id} (paired over {B.episodes} episodes, "
                      f"one model set).", "episode return", list(ev["gtp"]["returns"]), baseline=f"MPPI N={n_eq}",
                      baselines={f"MPPI N={n_eq}": list(ev["mppi"]["returns"])}, better="higher",
                      margin=-float(cfg.claims.pendulum_margin), paired=True),
    ]
    checks = [Claim.check("planner_never_steps_env", "While GTP plans, the environment's step is never called.",
                          "env.step calls while planning",
                          ex.env_steps_during_planning(env_id, ex.make_planner("gtp", m, 8, cfg), steps=5), target=0)]
    extra = {"latency_ms": {str(n): {k: 1e3 * r.median(k) for k in r.wall} for n, r in res_by_n.items()},
             "mppi_equal_time_n": n_eq}
    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds,
            "timings": {"fit_s": fit_s}, "extra": extra}
