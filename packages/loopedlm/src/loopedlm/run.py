"""``run(cfg) -> dict``: experiment A (random-init §4.2 replica), B (trained char-level model against a
depth-12 feedforward control) and the tracer benchmark. Pure and callable from tests and notebooks."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch

from loopedlm.baselines import colsum_profile, feedforward_control, naive_trace, uniform_causal_colsum
from loopedlm.data import CHARS, arithmetic_batches
from loopedlm.metrics import (
    attention_similarity,
    classify_limits,
    fixed_point_metrics,
    shuffled_null,
    stage_correlation,
)
from loopedlm.model import LoopedConfig, LoopedLM
from loopedlm.trace import trace
from loopedlm.train import train
from paperworks import Claim, binomial_ci, seeds_of

log = logging.getLogger(__name__)
OFFLINE = "Ouro / Huginn / retrofitted-Llama weights (not downloadable in this offline miniature)"


# A: random-init replica ------------------------------------------------------------------------

def run_a(cfg, seeds) -> tuple[list[dict], list[Claim], dict]:
    a = cfg.a
    rows, curves = [], {}
    for k in a.blocks:
        for norm in a.norms:
            for inj in a.injection:
                for seed in seeds:
                    torch.manual_seed(seed)
                    model = LoopedLM(LoopedConfig(vocab_size=int(a.vocab), d_model=int(a.d_model),
                                                  n_heads=int(a.heads), prelude=0, block=int(k), coda=0,
                                                  norm=str(norm), injection=bool(inj),
                                                  weight_std=float(a.weight_std))).eval()
                    g = torch.Generator().manual_seed(seed)
                    ids = torch.randint(0, int(a.vocab), (1, int(a.T)), generator=g)
                    tr = trace(model, ids, int(a.recurrences), generator=g)
                    fp = fixed_point_metrics(tr)
                    att = attention_similarity(tr, recurrences=int(a.attn_recurrences))
                    lim = classify_limits(tr, float(a.tau), float(a.rho))
                    rows.append({"part": "A", "block": int(k), "norm": str(norm), "injection": bool(inj),
                                 "seed": seed, "tail": fp["tail"], "min_cosine": fp["min_cosine"],
                                 "final_distance_r2": float(fp["distance"][1].mean()),
                                 "band_rate": att["band_rate"], "chance": att["chance"],
                                 "fixed_point_rate": lim["rates"]["fixed_point"]})
                    curves[f"{norm}|{inj}|{k}|{seed}"] = fp["successive"].mean(1)
    tau = float(a.tau)

    def sel(norm, inj, key):
        return [r[key] for r in rows if r["norm"] == norm and r["injection"] == inj]

    claims = []
    for norm in ("pre", "sandwich"):
        if norm in a.norms and True in a.injection:
            claims.append(Claim.threshold(
                f"A_{norm}_injection_converges",
                f"Random init, {norm}-norm with input injection: every block layer reaches a fixed point "
                f"(successive relative difference at the last recurrence below τ={tau}).",
                "‖X_t − X_{t−1}‖/‖X_t‖ at t = R, mean over layers", sel(norm, True, "tail"),
                threshold=tau, better="lower"))
            claims.append(Claim.threshold(
                f"A_{norm}_injection_nondegenerate",
                f"Random init, {norm}-norm with injection: the layers' fixed points are distinct "
                f"(min pairwise cosine < 0.99).", "min cosine between layers' fixed points",
                sel(norm, True, "min_cosine"), threshold=0.99, better="lower", bounds=(-1, 1)))
    if "ouro" in a.norms and True in a.injection:
        claims.append(Claim.threshold(
            "A_ouro_injection_does_not_converge",
            f"Random init, Ouro norm with injection: the fixed points are not stable (tail difference > τ={tau}).",
            "‖X_t − X_{t−1}‖/‖X_t‖ at t = R", sel("ouro", True, "tail"), threshold=tau, better="higher"))
    if "pre" in a.norms and False in a.injection:
        pre_tails = sel("pre", False, "tail")
        claims.append(Claim.threshold(
            "A_pre_no_injection_degenerate",
            "Random init, pre-norm without injection converges degenerately (min cosine between layers' "
            "fixed points > 0.99).", "min cosine between layers' fixed points", sel("pre", False, "min_cosine"),
            threshold=0.99, better="higher", bounds=(-1, 1),
            requires={"pre-norm without injection converged (tail < τ) in every run": all(t < tau for t in
                                                                                           pre_tails)}))
    others = [r["tail"] for r in rows if not r["injection"] and r["norm"] != "pre"]
    if others:
        claims.append(Claim.threshold(
            "A_only_pre_converges_without_injection",
            f"Without injection, sandwich and Ouro norms do not converge (tail difference > τ={tau}).",
            "‖X_t − X_{t−1}‖/‖X_t‖ at t = R", others, threshold=tau, better="higher"))
    conv = [r for r in rows if r["injection"] and r["norm"] in ("pre", "sandwich")]
    if conv:
        claims.append(Claim.compare(
            "A_attention_diagonal_band",
            "Attention maps form a diagonal band: a layer's nearest map at another recurrence is its own "
            "(rate above chance 1/k), pre/sandwich with injection.", "nearest-other-recurrence same-layer rate",
            [r["band_rate"] for r in conv], baseline="chance", baselines={"chance": [r["chance"] for r in conv]},
            better="higher", paired=True, bounds=(0, 1)))
    claims.append(Claim.threshold(
        "fixed_point_distance_real_models",
        "Distance to the per-layer fixed point (at 128 iterations) → 0 for Huginn and retrofitted Llama, not Ouro.",
        "relative distance to X_{ℓ,128}", 0.0, threshold=0.05, better="lower",
        requires={OFFLINE: False}, notes="needs the real checkpoints; HFLoopAdapter / LoopedModelAdapter run them"))
    return rows, claims, curves


# B: trained ------------------------------------------------------------------------------------

def _profiles(model, ids, r):
    tr = trace(model, ids, r)
    return colsum_profile(tr.attentions.numpy()), tr  # (R, k)


def run_b(cfg, seeds, out_dir: Path | None = None) -> tuple[list[dict], list[Claim], dict]:
    b = cfg.b
    rows, store = [], {}
    base = dict(vocab_size=len(CHARS), d_model=int(b.d_model), n_heads=int(b.heads), norm=str(b.norm))
    for k in b.blocks:
        for seed in seeds:
            torch.manual_seed(seed)
            lcfg = LoopedConfig(**base, prelude=int(b.prelude), block=int(k), coda=int(b.coda),
                                recurrences=int(b.recurrences), injection=bool(b.injection))
            looped = LoopedLM(lcfg)
            random_init = LoopedLM(lcfg).eval()
            torch.manual_seed(seed)
            control = feedforward_control(lcfg, depth=int(b.control_depth))
            t0 = time.perf_counter()
            ls = train(looped, steps=int(b.steps), batch=int(b.batch), t=int(b.T), lr=float(b.lr), seed=seed)
            cs = train(control, steps=int(b.steps), batch=int(b.batch), t=int(b.T), lr=float(b.lr), seed=seed)
            log.info("B k=%d seed=%d trained in %.1fs: looped %s control %s", k, seed,
                     time.perf_counter() - t0, ls, cs)
            if out_dir is not None and seed == seeds[0]:  # self-contained: LoopedLM.from_pretrained(path)
                looped.save_pretrained(Path(out_dir) / "models" / f"looped_k{k}")
                control.save_pretrained(Path(out_dir) / "models" / f"control_k{k}")
            ids = arithmetic_batches(np.random.default_rng(20_000 + seed), int(b.eval_seqs), int(b.T))
            torch.manual_seed(seed)
            prof, _ = _profiles(looped, ids, int(b.recurrences))
            ctrl = colsum_profile(trace(control, ids, 1).attentions.numpy())[0]
            torch.manual_seed(seed)
            rprof, _ = _profiles(random_init, ids, int(b.recurrences))
            block = prof.mean(0)
            r_tr = stage_correlation(block, ctrl)
            null = shuffled_null(block, ctrl, rng=np.random.default_rng(seed))
            r_rand = stage_correlation(rprof.mean(0), ctrl)
            rep = float(np.mean([stage_correlation(prof[t], prof[0]) for t in range(1, len(prof))]))
            rep_null = float(np.mean([shuffled_null(prof[t], prof[0], n=50, rng=np.random.default_rng(t)).mean()
                                      for t in range(1, len(prof))]))
            ext = {}
            for r in b.extrapolate:
                torch.manual_seed(seed)
                p, tr = _profiles(looped, ids, int(r))
                fp = fixed_point_metrics(tr)
                lim = classify_limits(tr, float(b.tau), float(b.rho))
                beyond = p[int(b.recurrences):].mean(0)
                ext[int(r)] = {"tail": fp["tail"], "min_cosine": fp["min_cosine"],
                               "r_beyond": stage_correlation(beyond, ctrl),
                               "orbit_slider": lim["counts"]["orbit"] + lim["counts"]["slider"], "n": lim["n"],
                               "fixed_point_rate": lim["rates"]["fixed_point"]}
            rows.append({"part": "B", "block": int(k), "seed": seed, "looped_val_loss": ls["val_loss"],
                         "control_val_loss": cs["val_loss"], "r_trained": r_tr, "r_null_mean": float(null.mean()),
                         "r_random_init": r_rand, "repeat_r": rep, "repeat_null": rep_null,
                         "colsum_mean": float(block.mean()), "colsum_uniform": uniform_causal_colsum(int(b.T)),
                         **{f"x{r}_{kk}": v for r, d in ext.items() for kk, v in d.items()}})
            store[f"{k}|{seed}"] = {"looped": prof.tolist(), "control": ctrl.tolist(), "random": rprof.tolist()}
    stream = arithmetic_batches(np.random.default_rng(30_000), 256, int(b.T)).flatten().numpy()
    freq = np.bincount(stream, minlength=len(CHARS)) / stream.size
    unigram = float(-(freq[freq > 0] * np.log(freq[freq > 0])).sum())
    claims = []
    for k in b.blocks:
        rs = [r for r in rows if r["block"] == int(k)]
        tag = f"k{k}"
        trained = {f"every looped model and control trained below the unigram entropy ({unigram:.2f} nats)":
                   all(max(r["looped_val_loss"], r["control_val_loss"]) < unigram for r in rs)}
        claims.append(Claim.compare_all(
            f"B_{tag}_stages_mirror_feedforward",
            f"The trained (p,{k}⊗l,c) block's per-layer ColSum profile correlates with the depth-"
            f"{b.control_depth} feedforward control's profile (relative depth) more than a shuffled-layer null "
            "and than the same architecture at random init.", "Pearson r of ColSum profiles",
            [r["r_trained"] for r in rs], baselines={"shuffled_layers": [r["r_null_mean"] for r in rs],
                                                     "random_init": [r["r_random_init"] for r in rs]},
            better="higher", paired=True, bounds=(-1, 1), requires=trained))
        claims.append(Claim.compare(
            f"B_{tag}_stages_repeat",
            "The block's ColSum profile repeats every recurrence (profile at t correlates with t = 1 more than "
            "under shuffled layers).", "mean Pearson r(profile_t, profile_1)", [r["repeat_r"] for r in rs],
            baseline="shuffled_layers", baselines={"shuffled_layers": [r["repeat_null"] for r in rs]},
            better="higher", paired=True, bounds=(-1, 1), requires=trained))
        claims.append(Claim.compare(
            f"B_{tag}_colsum_above_uniform_causal",
            "Trained heads concentrate on columns beyond what the causal mask alone gives (mean block ColSum "
            "above the uniform-causal value).", "ColSum concentration C", [r["colsum_mean"] for r in rs],
            baseline="uniform_causal", baselines={"uniform_causal": [r["colsum_uniform"] for r in rs]},
            better="higher", paired=True, bounds=(0, 1)))
        for r in b.extrapolate:
            claims.append(Claim.threshold(
                f"B_{tag}_fixed_point_at_{r}",
                f"Extrapolated to {r} recurrences (trained at {b.recurrences}) the block reaches a fixed point "
                f"(tail difference < τ={b.tau}).", "‖X_t − X_{t−1}‖/‖X_t‖ at t = R",
                [x[f"x{r}_tail"] for x in rs], threshold=float(b.tau), better="lower"))
            claims.append(Claim.compare(
                f"B_{tag}_stages_stable_at_{r}",
                f"Beyond the trained recurrence count (to {r}) the stage profile still mirrors the control "
                "(above the shuffled null).", "Pearson r of ColSum profiles, recurrences beyond training",
                [x[f"x{r}_r_beyond"] for x in rs], baseline="shuffled_layers",
                baselines={"shuffled_layers": [x["r_null_mean"] for x in rs]}, better="higher", paired=True,
                bounds=(-1, 1), requires=trained))
        last = max(int(r) for r in b.extrapolate)
        hits, n = sum(x[f"x{last}_orbit_slider"] for x in rs), sum(x[f"x{last}_n"] for x in rs)
        claims.append(Claim.threshold(
            f"B_{tag}_orbits_sliders_rare",
            f"Orbits and sliders are rare (< 1% of tokens at {last} recurrences; τ={b.tau}, ρ={b.rho}).",
            "orbit + slider rate", binomial_ci(int(hits), int(n)), threshold=0.01, better="lower"))
    claims.append(Claim.threshold(
        "huginn_no_clear_stages", "Huginn shows no clear stages; Ouro drifts beyond its trained recurrences.",
        "Pearson r of ColSum profiles", 0.0, threshold=0.5, better="lower", requires={OFFLINE: False}))
    return rows, claims, store


# checks --------------------------------------------------------------------------------------

def run_checks(seed: int = 0) -> list[Claim]:
    torch.manual_seed(seed)
    model = LoopedLM(LoopedConfig(vocab_size=16, d_model=32, n_heads=4, prelude=1, block=3, coda=1)).eval()
    ids = torch.randint(0, 16, (2, 10))
    tr = trace(model, ids, 6, generator=torch.Generator().manual_seed(seed))
    naive = naive_trace(model, ids, 6, seed=seed)
    from loopedlm.metrics import colsum_concentration, uniform_causal

    t = 16
    return [
        Claim.check("trace_equals_naive_loop", "The one-pass trace equals re-running with 1..R recurrences.",
                    "max |Δ state|", float((tr.residuals - naive).abs().max()), threshold=1e-5, better="lower"),
        Claim.check("colsum_one_hot_column", "ColSum is 1 when every query attends to token 0.", "C",
                    float(colsum_concentration(np.eye(t)[[0] * t])), target=1.0, tol=1e-12),
        Claim.check("colsum_uniform_causal_below_one", "Uniform causal attention has 0 < C < 1.", "C",
                    float(colsum_concentration(uniform_causal(t))), target=0.5, tol=0.5)
    ]


# bench ---------------------------------------------------------------------------------------

def _bench_setup(d_model, block, t):
    torch.manual_seed(0)
    model = LoopedLM(LoopedConfig(vocab_size=32, d_model=d_model, n_heads=4, prelude=2, block=block, coda=2)).eval()
    return model, torch.randint(0, 32, (1, t))


def _bench_trace(model, ids, r):
    return trace(model, ids, r, generator=torch.Generator().manual_seed(0)).residuals.shape


def _bench_naive(model, ids, r):
    return naive_trace(model, ids, r, seed=0).shape


def run_bench(cfg) -> tuple[list[dict], list[Claim], list[Claim]]:
    from paperworks import bench

    bc = cfg.bench
    torch.manual_seed(0)
    model = LoopedLM(LoopedConfig(vocab_size=32, d_model=int(bc.d_model), n_heads=4, prelude=2,
                                  block=int(bc.block), coda=2)).eval()
    ids = torch.randint(0, 32, (1, int(bc.T)))
    r = int(bc.recurrences)

    def traced():
        return trace(model, ids, r, generator=torch.Generator().manual_seed(0))

    def naive():
        return naive_trace(model, ids, r, seed=0)

    def untraced():
        with torch.no_grad():
            return model(ids, num_recurrences=r, generator=torch.Generator().manual_seed(0))

    res = bench.compare({"trace": traced, "naive_loop": naive, "forward": untraced}, repeats=int(bc.repeats))
    diff = float((traced().residuals - naive()).abs().max())
    claims = [
        Claim.threshold("trace_speedup_over_naive", f"One traced forward over {r} recurrences is at least 10× "
                        "faster than the naive loop re-running with 1..R recurrences.", "wall-time ratio naive/trace",
                        res.speedup("trace", over="naive_loop"), threshold=10.0, better="higher"),
        Claim.threshold("trace_overhead", "Tracing costs at most 1.5× an untraced forward.",
                        "wall-time ratio trace/forward", res.speedup("forward", over="trace"), threshold=1.5,
                        better="lower")
    ]
    checks = [Claim.check("bench_states_equal", "Trace and naive loop give the same states.", "max |Δ state|",
                          diff, threshold=1e-5, better="lower")]
    rows = res.rows()
    if bc.get("memory", True):
        from functools import partial

        setup = partial(_bench_setup, int(bc.d_model), int(bc.block), int(bc.T))
        for name, fn in (("trace", _bench_trace), ("naive_loop", _bench_naive)):
            mem = bench.peak_memory(fn, r, setup=setup)
            rows.append({"candidate": f"{name}_peak_memory", "peak_mib": mem.mib, "memory_method": mem.method})
    return rows, claims, checks


def run(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    torch.set_num_threads(int(cfg.get("threads", 1)))
    rows, claims, checks, extra = [], [], [], {}
    if cfg.a.enabled:
        r, c, curves = run_a(cfg, seeds)
        rows, claims = rows + r, claims + c
        extra["a_curves"] = {k: v.tolist() for k, v in curves.items()}
    if cfg.b.enabled:
        r, c, store = run_b(cfg, seeds[: int(cfg.b.seeds)] if cfg.b.get("seeds") else seeds, out_dir)
        rows, claims = rows + r, claims + c
        extra["b_profiles"] = store
    if cfg.bench.enabled:
        r, c, ch = run_bench(cfg)
        rows, claims, checks = rows + r, claims + c, checks + ch
    checks += run_checks(seeds[0])

    def plots(out_dir):
        from loopedlm.plot import plot_all

        plot_all(rows, extra, Path(out_dir))

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "extra": extra, "plots": plots}
