"""``run(cfg) -> dict``: the CPU miniature of Being-H0.7's claims (pure, callable from tests and notebooks).

Per seed s: the expert's Intercept demos (the smaller demo counts are the first episodes of the
largest set), a held-out validation set; every arm is trained on the same data, steps and seed,
then evaluated closed-loop on the same 200 episodes. Metrics: success (headline), held-out action
MSE beside it, probe R² from the prior latents to the ball at t + 4, t + 8, and the latents'
effective rank by step.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch

from latentwam import checks as _checks
from latentwam.baselines import PixelWAM
from latentwam.data import collect_demos
from latentwam.train import action_mse, evaluate, latent_matrix, probe, train
from latentwam.wam import LatentWAM, VLAPolicy, effective_rank
from paperworks import Claim, seeds_of

log = logging.getLogger("latentwam")

INTERCEPT, REACH = "latentwam/Intercept-v0", "latentwam/Reach-v0"
LATENT_ARMS = {
    "latent": {},
    "no_posterior": {"posterior": False},
    "no_reg": {"reg_weight": 0.0},
    "no_stopgrad": {"stop_grad": False},
}
LABELS = {"vla": "VLA", "latent": "latent WAM", "pixel": "pixel WAM", "no_posterior": "no posterior",
          "no_reg": "no regulariser", "no_stopgrad": "no stop-grad"}


def make_model(arm: str, cfg, action_dim: int = 2, proprio_dim: int = 2):
    m = cfg.model
    common = {"action_dim": action_dim, "proprio_dim": proprio_dim, "chunk": int(m.chunk), "dim": int(m.dim),
              "head": str(m.head)}
    if arm == "vla":
        return VLAPolicy(**common)
    if arm == "pixel":
        return PixelWAM(**common, decoder=str(m.pixel_decoder), future_offsets=tuple(m.future_offsets))
    if arm in LATENT_ARMS:
        kw = {"num_latents": int(m.num_latents), "future_offsets": tuple(m.future_offsets),
              "reg_weight": float(m.reg_weight), **LATENT_ARMS[arm]}
        return LatentWAM(**common, **kw)
    raise ValueError(f"unknown arm {arm!r}; expected vla, pixel or one of {sorted(LATENT_ARMS)}")


def _fit_and_score(arm, task, demos, val, seed, cfg, device):
    torch.manual_seed(seed)
    model = make_model(arm, cfg).to(device)
    has_latents = arm in LATENT_ARMS
    rank_curve = []

    def track(step, mdl):
        if has_latents:
            lat = latent_matrix(mdl, val, n=int(cfg.probe_samples), seed=0)
            rank_curve.append({"step": step, "eff_rank": effective_rank(lat), "latent_std": float(lat.std(0).mean())})
        return {}

    t0 = time.perf_counter()
    train(model, demos, steps=int(cfg.train.steps), batch_size=int(cfg.train.batch_size), lr=float(cfg.train.lr),
          seed=seed, track=track if has_latents else None, track_every=int(cfg.track_every))
    train_s = time.perf_counter() - t0
    env = INTERCEPT if task == "intercept" else REACH
    ev = evaluate(env, model, episodes=int(cfg.eval.episodes), seed=2_000_000 + 1000 * seed,
                  exec_horizon=int(cfg.eval.exec_horizon))
    row = {"task": task, "demos": demos.n_episodes, "arm": arm, "seed": seed, "success": ev["success"],
           "action_mse": action_mse(model, val), "train_s": train_s}
    if task == "intercept":
        row["probe_r2"] = probe(model, val, "ball_future")
    if has_latents:
        row["eff_rank"] = rank_curve[-1]["eff_rank"]
        row["latent_std"] = rank_curve[-1]["latent_std"]
    log.info("%s", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    return row, rank_curve, model


def run(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    if cfg.get("bench") is not None and cfg.bench.get("enabled", False):
        from latentwam.bench import run_bench

        return {**run_bench(cfg), "seeds": seeds}
    device = str(cfg.get("device", "cpu"))
    ic, ab, rc = cfg.intercept, cfg.ablations, cfg.reach
    demo_counts = sorted(int(n) for n in ic.demos)
    rows, curves = [], []
    saved = None
    for s in seeds:
        big = collect_demos(INTERCEPT, max(demo_counts + [int(ab.demos)]), seed=100_000 * (s + 1), steps=int(cfg.steps))
        val = collect_demos(INTERCEPT, int(cfg.val_episodes), seed=10_000_000 + 1000 * s, steps=int(cfg.steps))
        for n in demo_counts:
            demos = big.subset_episodes(np.arange(n))
            for arm in ic.arms:
                row, curve, model = _fit_and_score(arm, "intercept", demos, val, s, cfg, device)
                rows.append(row)
                curves += [{"arm": arm, "demos": n, "seed": s, **c} for c in curve]
                if arm == "latent" and n == demo_counts[-1] and s == seeds[0]:
                    saved = model
        demos = big.subset_episodes(np.arange(int(ab.demos)))
        for arm in ab.arms:
            row, curve, _ = _fit_and_score(arm, "intercept", demos, val, s, cfg, device)
            rows.append(row)
            curves += [{"arm": arm, "demos": int(ab.demos), "seed": s, **c} for c in curve]
        if rc.enabled:
            rdemos = collect_demos(REACH, int(rc.demos), seed=100_000 * (s + 1), steps=int(cfg.steps))
            rval = collect_demos(REACH, int(cfg.val_episodes), seed=10_000_000 + 1000 * s, steps=int(cfg.steps))
            for arm in rc.arms:
                row, _, _ = _fit_and_score(arm, "reach", rdemos, rval, s, cfg, device)
                rows.append(row)

    refs = {name: evaluate(INTERCEPT, name, episodes=int(cfg.eval.episodes), seed=2_000_000,
                           exec_horizon=int(cfg.eval.exec_horizon))["success"]
            for name in ("expert", "chase", "random")}
    claims = build_claims(rows, curves, refs, cfg, seeds)
    checks = _checks.identity_checks(cfg) + _checks.env_checks(refs)
    if out_dir is not None and saved is not None:
        saved.save(Path(out_dir) / "latent_wam.pt")

    def plots(out_dir):
        from latentwam.plot import plot_rank, plot_success

        plot_success(rows, Path(out_dir) / "success_vs_demos.png", refs)
        plot_rank(curves, Path(out_dir) / "effective_rank.png")

    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "plots": plots,
            "extra": {"references": refs, "rank_curves": curves}}


# claims -------------------------------------------------------------------------------------------

def _vals(rows, task, arm, demos, key, seeds):
    out = []
    for s in seeds:
        v = [r[key] for r in rows if r["task"] == task and r["arm"] == arm and r["demos"] == demos and r["seed"] == s]
        if v:
            out.append(v[0])
    return out


def build_claims(rows, curves, refs, cfg, seeds) -> list:
    ic, ab, rc = cfg.intercept, cfg.ablations, cfg.reach
    demo_counts = sorted(int(n) for n in ic.demos)
    arms = list(ic.arms)
    steps = int(cfg.train.steps)
    rnd = refs["random"]
    ctx = f"({len(seeds)} seeds, {steps} steps, {int(cfg.eval.episodes)} closed-loop episodes, paired over seeds)"
    claims = []

    def trained(vals, who):  # a policy that does not beat random play has not learned the task
        return (f"{who} beats random play ({rnd:.2f}) by 0.05 on average", bool(np.mean(vals) > rnd + 0.05))

    if "latent" in arms and "vla" in arms:
        for n in demo_counts:
            lat, vla = _vals(rows, "intercept", "latent", n, "success", seeds), _vals(rows, "intercept", "vla", n, "success", seeds)
            mse_l = np.mean(_vals(rows, "intercept", "latent", n, "action_mse", seeds))
            mse_v = np.mean(_vals(rows, "intercept", "vla", n, "action_mse", seeds))
            claims.append(Claim.compare(
                f"latent_beats_vla_success_{n}",
                f"Claims 1-2: with {n} demos the latent WAM intercepts more often than the VLA policy {ctx}.",
                "closed-loop success rate (Intercept-v0)", lat, baseline="VLA",
                baselines={"VLA": vla, "chase heuristic": refs["chase"], "expert": refs["expert"]},
                better="higher", paired=True, bounds=(0, 1),
                requires=[trained(lat, "the latent WAM"), trained(vla, "the VLA")],
                notes=f"held-out action MSE beside it: latent {mse_l:.4f}, VLA {mse_v:.4f}"))
    if "latent" in arms and "pixel" in arms:
        lat = [v for n in demo_counts for v in _vals(rows, "intercept", "latent", n, "success", seeds)]
        pix = [v for n in demo_counts for v in _vals(rows, "intercept", "pixel", n, "success", seeds)]
        claims.append(Claim.compare(
            "latent_matches_pixel_success",
            f"Claim 4 (miniature): the latent WAM is no worse than the pixel WAM by more than 0.05 in success "
            f"(paired over seeds × demo counts {demo_counts}; {steps} steps each). Its lower cost is in the bench.",
            "closed-loop success rate (Intercept-v0)", lat, baseline="pixel WAM", baselines={"pixel WAM": pix},
            better="higher", margin=-0.05, paired=True, bounds=(0, 1),
            requires=[trained(pix, "the pixel WAM")]))
    if "latent" in arms and "vla" in arms:
        n = demo_counts[-1]
        lat, vla = _vals(rows, "intercept", "latent", n, "probe_r2", seeds), _vals(rows, "intercept", "vla", n, "probe_r2", seeds)
        claims.append(Claim.compare(
            "prior_latents_predict_ball_future",
            f"Claim 2: a ridge probe from the prior latents (4×64) predicts the ball at t+4, t+8 better than from "
            f"the VLA's pooled tokens of the same width (held-out episodes; {n} demos).",
            "probe R² (ball at t+4, t+8)", lat, baseline="VLA tokens", baselines={"VLA tokens": vla},
            better="higher", paired=True))
    ab_n = int(ab.demos)
    full = _vals(rows, "intercept", "latent", ab_n, "success", seeds)
    if full and "no_posterior" in ab.arms:
        nop = _vals(rows, "intercept", "no_posterior", ab_n, "success", seeds)
        claims.append(Claim.compare(
            "posterior_beats_queries_alone",
            f"Claim 2: the dual-branch training is what helps, not the extra tokens: the latent WAM beats the same "
            f"model trained without the posterior branch ({ab_n} demos) {ctx}.",
            "closed-loop success rate (Intercept-v0)", full, baseline="no posterior",
            baselines={"no posterior": nop}, better="higher", paired=True, bounds=(0, 1),
            requires=[trained(full, "the latent WAM")]))
    if full and "no_stopgrad" in ab.arms:
        nsg = _vals(rows, "intercept", "no_stopgrad", ab_n, "success", seeds)
        claims.append(Claim.compare(
            "stopgrad_helps",
            f"Ablation (inferred design choice): aligning to sg(h_post) beats aligning without stop-grad ({ab_n} demos) {ctx}.",
            "closed-loop success rate (Intercept-v0)", full, baseline="no stop-grad",
            baselines={"no stop-grad": nsg}, better="higher", paired=True, bounds=(0, 1),
            requires=[trained(full, "the latent WAM")]))
    if full and "no_reg" in ab.arms:
        r_full = _vals(rows, "intercept", "latent", ab_n, "eff_rank", seeds)
        r_none = _vals(rows, "intercept", "no_reg", ab_n, "eff_rank", seeds)
        sd_none = np.mean(_vals(rows, "intercept", "no_reg", ab_n, "latent_std", seeds))
        sd_full = np.mean(_vals(rows, "intercept", "latent", ab_n, "latent_std", seeds))
        claims.append(Claim.compare(
            "regulariser_prevents_collapse",
            f"Claim 3: without the anti-collapse regulariser the prior latents collapse: their effective rank at the "
            f"end of training is lower than with it ({ab_n} demos; held-out samples; paired over seeds).",
            "effective rank of the prior latents (N × 256)", r_full, baseline="no regulariser",
            baselines={"no regulariser": r_none}, better="higher", paired=True,
            notes=f"mean per-dimension latent std: with {sd_full:.3f}, without {sd_none:.3f}"))
        s_none = _vals(rows, "intercept", "no_reg", ab_n, "success", seeds)
        claims.append(Claim.compare(
            "regulariser_helps_success",
            f"Claim 3 (downstream): the regulariser improves closed-loop success ({ab_n} demos) {ctx}.",
            "closed-loop success rate (Intercept-v0)", full, baseline="no regulariser",
            baselines={"no regulariser": s_none}, better="higher", paired=True, bounds=(0, 1),
            requires=[trained(full, "the latent WAM")]))
    if rc.enabled and "latent" in rc.arms and "vla" in rc.arms:
        lat = _vals(rows, "reach", "latent", int(rc.demos), "success", seeds)
        vla = _vals(rows, "reach", "vla", int(rc.demos), "success", seeds)
        diff = [a - b for a, b in zip(lat, vla, strict=True)]
        claims.append(Claim.within(
            "reach_control_no_gain",
            "Control: on Reach-v0 (static target, the future is useless) the latent WAM's success equals the VLA's "
            f"within ±0.05 (paired differences over seeds; {int(rc.demos)} demos).",
            "success(latent WAM) − success(VLA) on Reach-v0", diff, target=0.0, tol=0.05,
            baselines={"latent WAM": float(np.mean(lat)), "VLA": float(np.mean(vla))},
            requires=[("the control is not saturated: the VLA's mean success lies in [0.05, 0.95]",
                       bool(0.05 <= np.mean(vla) <= 0.95))]))
    claims.append(Claim.threshold(
        "claim4_benchmarks_and_robots",
        "Claim 4: state-of-the-art or competitive on six simulation benchmarks and real robots (LIBERO, RoboCasa, "
        "...; egocentric-video pretraining). Not reproducible offline on CPU; only its cost side is measured (bench).",
        "benchmark success", float("nan"), threshold=0.5, better="higher",
        requires=[("the six benchmarks, the real robots and the egocentric pretraining data are available offline",
                   False)]))
    return claims
