"""The bench: per-step time and peak memory of mean-field FK against its baselines (MMD reward, d = 20)."""

from __future__ import annotations

import functools

import torch

from paperworks import Claim

CANDIDATES = {
    "meanfield_picard": {"mode": "meanfield", "k_fp": 3},
    "meanfield_linear": {"mode": "meanfield", "psi_dot": "linear"},
    "gradient": {"mode": "gradient"},
    "pointwise": {"mode": "pointwise"},
    "unsteered": None,
}


def _problem(dim: int, lam: float):
    from meanfieldsteer.diffusion import GaussianMixture
    from meanfieldsteer.rewards import MMDReward

    g = torch.Generator().manual_seed(0)
    means = torch.stack([torch.full((dim,), -1.0), torch.full((dim,), 1.0)]).double()
    p = GaussianMixture([0.25, 0.75], means, [0.5, 0.5])
    nu = GaussianMixture([0.75, 0.25], means, [0.5, 0.5]).sample(512, generator=g)
    return p, MMDReward(nu.float(), lam=lam, bandwidth=float(dim) ** 0.5)


def _sampler(name, p, reward, steps, n):
    from meanfieldsteer.sampler import MeanFieldSampler

    kw = CANDIDATES[name]
    frozen = None
    if kw is not None and kw.get("mode") == "pointwise":  # the pilot is not part of the per-step cost
        frozen = MeanFieldSampler(p, None, n_steps=steps).sample(n, p.dim, dtype=torch.float32,
                                                                generator=torch.Generator().manual_seed(1))
    return MeanFieldSampler(p, None if kw is None else reward, n_steps=steps, frozen=frozen, **(kw or {}))


def _run(s, n, dim):
    s.sample(n, dim, generator=torch.Generator().manual_seed(0), dtype=torch.float32)


def _mem_setup(name, dim, lam, steps, n):  # runs in peak_memory's child process
    torch.set_num_threads(1)
    p, reward = _problem(dim, lam)
    return _sampler(name, p, reward, steps, n), n, dim


def run_bench(cfg) -> tuple[list, list, list]:
    from paperworks.bench import compare, peak_memory

    b = cfg.bench
    dim, steps, lam = int(b.dim), int(b.steps), float(b.lam)
    p, reward = _problem(dim, lam)
    rows, claims, checks = [], [], []
    res_big = None
    for n in b.n_list:
        n = int(n)
        names = [c for c in CANDIDATES if not (c == "meanfield_linear" and n > 1024)]
        samplers = {c: _sampler(c, p, reward, steps, n) for c in names}
        res = compare({c: (lambda s=s, n=n: _run(s, n, dim)) for c, s in samplers.items()}, repeats=int(b.repeats),
                      warmup=1, threads=1)
        for r in res.rows():
            rows.append({"exp": "bench", "what": "per_step", "n": n, "dim": dim, "steps_per_call": steps, **r})
        for c in names:
            if c != "gradient":
                sp = res.speedup("gradient", over=c)  # time(c) / time(gradient)
                rows.append({"exp": "bench", "what": "time_ratio_to_gradient", "n": n, "candidate": c,
                             "ratio": sp.value, "ratio_lower": sp.lower, "ratio_upper": sp.upper})
        s = samplers["meanfield_picard"]
        _run(s, n, dim)
        rows.append({"exp": "bench", "what": "psi_dot_share", "n": n,
                     "share": s.timings["psi_dot"] / s.timings["total"]})
        if n == max(int(v) for v in b.n_list):
            res_big = (n, res)
    n, res = res_big
    claims.append(Claim.threshold(
        "bench_meanfield_within_1.5x_gradient", f"Performance: mean-field FK (K_FP = 3, Picard) takes at most 1.5× the "
        f"wall time of gradient-only steering (MMD reward, N = {n}, d = {dim}; per Euler–Maruyama step, {steps} steps "
        "per call, ratio of paired medians; the paper's ~50 % overhead).", "time(mean-field) / time(gradient)",
        res.speedup("gradient", over="meanfield_picard"), threshold=1.5, better="lower",
        notes="per-step time: a 200-step run's time ratio is the same ratio; 1 thread"))
    for c in CANDIDATES:
        mn = int(b.memory_n)
        mem = peak_memory(_run_child, setup=functools.partial(_mem_setup, c, dim, lam, steps, mn))
        rows.append({"exp": "bench", "what": "peak_memory", "candidate": c, "n": mn, "peak_mib": mem.mib,
                     "memory_method": mem.method, "wall_s": mem.wall_s})
    return claims, checks, rows


def _run_child(s, n, dim):
    _run(s, n, dim)


__all__ = ["run_bench"]
