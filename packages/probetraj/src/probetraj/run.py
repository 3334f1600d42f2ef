"""``run(cfg) -> dict``: the experiments (smoke: planted HMM; quick/paper: the tiny reasoning model;
bench: live monitoring against plain generation)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from paperworks import Claim, seeds_of
from probetraj.evaluate import auroc, bootstrap_auroc, grouped_folds, out_of_fold, outcome_classifier
from probetraj.probe import POOLINGS, PooledProbe
from probetraj.world import planted_hmm

log = logging.getLogger(__name__)
B = (0, 1)


def run(cfg, out_dir: Path | None = None) -> dict:
    if cfg.experiment.name == "bench":
        from probetraj.bench import run_bench

        return run_bench(cfg, out_dir)
    if str(cfg.mode) == "planted":
        return run_planted(cfg, out_dir)
    return run_lm(cfg, out_dir)


# smoke: the planted HMM --------------------------------------------------------------------------


def run_planted(cfg, out_dir=None) -> dict:
    """Hidden-state sequences from a planted HMM (no LM): the trajectory predicts the final state,
    the first read-out cannot."""
    seeds = seeds_of(cfg)
    rows, traj_auc, t0_auc = [], [], []
    p = cfg.planted
    for seed in seeds:
        kw = dict(T=int(p.T), d=int(p.d), switch=float(p.switch), separation=float(p.separation))
        H, y, g = planted_hmm(int(p.n), seed=seed, **kw)
        Htr, ytr, _ = planted_hmm(int(p.n), seed=seed + 1000, **kw)
        probe = PooledProbe(pooling=str(p.pooling), random_state=seed).fit(Htr, ytr)
        trajs = probe.trajectories(H)
        folds = grouped_folds(y, g, n_splits=5, seed=seed)
        s = out_of_fold(outcome_classifier(), trajs, y, folds)
        s0 = np.array([t[0] for t in trajs])
        a, a0 = auroc(y, s), auroc(y, s0)
        lo0, hi0 = bootstrap_auroc(y, s0, g, seed=seed, n=200)
        traj_auc.append(a)
        t0_auc.append(a0)
        rows.append({"seed": seed, "auroc_trajectory": a, "auroc_t0": a0, "auroc_t0_lo": lo0, "auroc_t0_hi": hi0})
    claims = [
        Claim.compare(
            "planted_trajectory_beats_t0",
            "On a planted HMM the trajectory features predict the final state better than the first read-out.",
            "AUROC",
            traj_auc,
            baseline="t0_readout",
            baselines={"t0_readout": t0_auc},
            better="higher",
            paired=True,
            bounds=B,
        ),
        Claim.threshold(
            "planted_trajectory_auroc",
            "On a planted HMM the trajectory AUROC exceeds 0.8.",
            "AUROC",
            traj_auc,
            threshold=0.8,
            better="higher",
            bounds=B,
        ),
    ]
    checks = [
        Claim.check(
            "planted_t0_near_chance",
            "The t=0 read-out of a planted HMM is near chance (|AUROC-0.5| "
            "<= 0.15 in every seed; the initial state is a fair coin).",
            "max |AUROC(t=0) - 0.5|",
            float(np.max(np.abs(np.array(t0_auc) - 0.5))),
            threshold=0.15,
            better="lower",
        )
    ]
    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds}


# quick / paper: the tiny reasoning model --------------------------------------------------------


def _train_or_load(cfg, out_dir, device):
    from paperworks.lm.tiny import save_local
    from probetraj.lm import build_model, train_lm, world_tokenizer
    from probetraj.world import ReasoningWorld

    tok = world_tokenizer()
    m = cfg.lm
    model = build_model(
        tok, width=int(m.width), layers=int(m.layers), heads=int(m.heads), n_ctx=int(m.n_ctx), seed=int(m.seed)
    )
    worlds = [ReasoningWorld(d, seed=int(m.seed)) for d in cfg.domains]
    t0 = time.perf_counter()
    losses = train_lm(
        model, tok, worlds, steps=int(m.steps), batch=int(m.batch), lr=float(m.lr), seed=int(m.seed), device=device
    )
    train_s = time.perf_counter() - t0
    model.to("cpu").eval()  # rollouts and probes run on the CPU (batched sampling of a 0.6M model)
    if out_dir is not None:
        save_local(Path(out_dir) / "model", model, tok)
    n_params = sum(p.numel() for p in model.parameters())
    log.info(
        "tiny GPT: %d parameters, %d steps in %.0f s, final loss %.3f",
        n_params,
        int(m.steps),
        train_s,
        float(np.mean(losses[-20:])),
    )
    return (
        model,
        tok,
        {
            "train_s": train_s,
            "n_params": n_params,
            "final_loss": float(np.mean(losses[-20:])),
            "first_loss": float(np.mean(losses[:10])),
        },
    )


def _per_seed(rows, domains, key):
    """Per-seed value of ``key`` averaged over the domains (NaN-aware)."""
    seeds = sorted({r["seed"] for r in rows})
    return [float(np.nanmean([r[key] for r in rows if r["seed"] == s and r["domain"] in domains])) for s in seeds]


def run_lm(cfg, out_dir=None) -> dict:
    from probetraj.activations import HFActivationSource
    from probetraj.experiments import run_domain, streaming_gap
    from probetraj.world import ReasoningWorld

    seeds = seeds_of(cfg)
    device = str(cfg.get("device", "cpu"))  # resolved by the glue (auto -> cuda when present)
    device = "cpu" if device == "auto" else device
    model, tok, info = _train_or_load(cfg, out_dir, device)
    rows, extras = [], {}
    for seed in seeds:
        for d in cfg.domains:
            world = ReasoningWorld(d, seed=int(cfg.lm.seed))
            t0 = time.perf_counter()
            row, ex = run_domain(model, tok, world, cfg, seed)
            row["seconds"] = time.perf_counter() - t0
            log.info(
                "seed %d %s: trajectory %.3f best-position %.3f prompt-end %.3f (%.0f s)",
                seed,
                d,
                row["auroc_trajectory"],
                row["auroc_best_position"],
                row["auroc_prompt_end"],
                row["seconds"],
            )
            rows.append(row)
            if seed == seeds[0]:
                extras[d] = ex
                if out_dir is not None:
                    ex["probe"].save(Path(out_dir) / f"probe_{d}.pt")
    doms = list(cfg.domains)
    v = lambda key, ds=doms: _per_seed(rows, ds, key)  # noqa: E731
    kept = min(r["kept_frac"] for r in rows)
    trained = {f"every domain's rollouts are well-formed (>= 90% kept; min {kept:.2f})": kept >= 0.9}
    balanced = {
        "both outcomes occur (label rate in [0.1, 0.9] in every run)": all(0.1 <= r["label_rate"] <= 0.9 for r in rows),
        **trained,
    }
    mainp = f"{cfg.probe.trajectory_data} {cfg.probe.trajectory_pooling}-pooled probe"
    claims = [
        Claim.compare_all(
            "trajectory_beats_static",
            f"Trajectory features (of the {mainp}) predict the model's answer better than "
            "a single static read-out of the same probe: at the end of the prompt and at the best CoT position "
            "(chosen on training folds); AUROC averaged over both domains.",
            "AUROC (GroupKFold by prompt)",
            v("auroc_trajectory"),
            baselines={"prompt_end": v("auroc_prompt_end"), "best_position": v("auroc_best_position")},
            better="higher",
            paired=True,
            bounds=B,
            requires=balanced,
        ),
        Claim.compare(
            "features_raise_separation",
            "Volatility, trend and steady-state features raise the separation over "
            "level-only features (trajectory mean and final value) in the same classifier.",
            "AUROC",
            v("auroc_trajectory"),
            baseline="level_only",
            baselines={"level_only": v("auroc_level_only")},
            better="higher",
            paired=True,
            bounds=B,
            requires=balanced,
        ),
        Claim.within(
            "template_parity",
            "Template-trained max-pooled probes reach the AUROC of probes trained on the model's own "
            "rollouts (|template - dynamic| <= 0.05).",
            "AUROC(template) - AUROC(dynamic), max pooling",
            [a - b for a, b in zip(v("auroc_template_max"), v("auroc_dynamic_max"))],
            target=0.0,
            tol=0.05,
            requires=balanced,
        ),
        Claim.compare_all(
            "max_beats_mean_last",
            "For template-trained probes, max pooling separates the outcomes better than "
            "mean pooling and last-token probes.",
            "AUROC (pooled probe score)",
            v("auroc_template_max"),
            baselines={"mean": v("auroc_template_mean"), "last": v("auroc_template_last")},
            better="higher",
            paired=True,
            bounds=B,
            requires=balanced,
        ),
        Claim.within(
            "mean_pool_collapses",
            "A template-trained mean-pooled probe is near chance (AUROC 0.5 ± 0.05).",
            "AUROC",
            v("auroc_template_mean"),
            target=0.5,
            tol=0.05,
            bounds=B,
            requires=balanced,
        ),
        Claim.within(
            "last_token_collapses",
            "A template-trained last-token probe is near chance (AUROC 0.5 ± 0.05).",
            "AUROC",
            v("auroc_template_last"),
            target=0.5,
            tol=0.05,
            bounds=B,
            requires=balanced,
        ),
        Claim.compare_all(
            "max_trajectories_stable",
            "Max-pooled (template) probes give steadier trajectories than mean-pooled and last-token probes.",
            "mean std of the first difference of the trajectory",
            v("volatility_template_max"),
            baselines={"mean": v("volatility_template_mean"), "last": v("volatility_template_last")},
            better="lower",
            paired=True,
            requires=trained,
        ),
        Claim.threshold(
            "holds_across_domains",
            "The trajectory beats the best static read-out in each domain (two domains of "
            "one tiny model, not the paper's 4 datasets x 4 LRMs): the smaller per-domain gain is > 0.",
            "min over domains of AUROC(trajectory) - AUROC(best position)",
            [
                min(a, b)
                for a, b in zip(
                    *[[x - y for x, y in zip(v("auroc_trajectory", [d]), v("auroc_best_position", [d]))] for d in doms]
                )
            ]
            if len(doms) == 2
            else v("auroc_trajectory"),
            threshold=0.0,
            better="higher",
            requires=balanced,
        ),
        Claim.within(
            "unfaithful_rate",
            "The CoT text is unfaithful to the model's answer (its last stance phrase points the "
            "other way) in 5-10% of rollouts (generator: 8% misleading traces).",
            "fraction of held-out rollouts",
            v("unfaithful_rate"),
            target=0.075,
            tol=0.025,
            bounds=B,
            requires=trained,
        ),
        Claim.compare(
            "trajectory_beats_text_on_unfaithful",
            "On the unfaithful subset the trajectory monitor beats the keyword CoT-text monitor.",
            "AUROC on rollouts whose CoT text contradicts the answer",
            v("auroc_unfaithful_trajectory"),
            baseline="keyword_text",
            baselines={"keyword_text": v("auroc_unfaithful_keyword_text")},
            better="higher",
            paired=True,
            bounds=B,
            requires={
                **balanced,
                "at least 20 unfaithful rollouts per run": min(r["n_unfaithful"] for r in rows) >= 20,
            },
        ),
    ]
    if "safety" in doms:
        claims.append(
            Claim.compare(
                "max_overfires_on_benign",
                "Max-pooled (template) probes fire more often than mean-pooled ones on complying "
                "answers to benign prompts (the counterpoint of 'Before the Last Token').",
                "fraction of complying benign-prompt rollouts scored > 0.5",
                v("benign_fpr_template_max", ["safety"]),
                baseline="mean",
                baselines={"mean": v("benign_fpr_template_mean", ["safety"])},
                better="higher",
                paired=True,
                bounds=B,
                requires=trained,
            )
        )
    src = HFActivationSource(model, tok, layer=int(cfg.probe.layer))
    first = extras[doms[0]]
    held = first["held"]
    world0 = ReasoningWorld(doms[0], seed=int(cfg.lm.seed))
    gaps = [streaming_gap(src, first["probe"], p) for _, p in world0.prompts(3, seed=seeds[0])]
    gaps = [g for g in gaps if np.isfinite(g)]
    checks = [
        Claim.check(
            "no_prompt_in_train_and_test",
            "No prompt is in both the train and test folds of any split, "
            "and the dynamic-probe prompts are disjoint from the held-out prompts.",
            "prompts shared",
            sum(r["leaked_prompts"] + r["prompt_overlap"] for r in rows),
            target=0,
            tol=0,
        ),
        Claim.check(
            "templates_length_matched",
            "Every template sentence has the same length (both classes).",
            "distinct template lengths per run",
            max(r["template_lengths"] for r in rows),
            target=1,
            tol=0,
        ),
        Claim.check(
            "streaming_equals_full_forward",
            "Live monitor scores equal the scores of one full forward of the finished text.",
            "max |difference|",
            max(gaps) if gaps else float("nan"),
            threshold=1e-4,
            better="lower",
        ),
        Claim.check(
            "trajectories_stop_before_end_think",
            "No held-out trajectory includes the state of </think> or "
            "of the answer (each has exactly its CoT's token count).",
            "mismatches",
            int(sum(len(h) != len(c.split()) for h, c in zip(held.cot_states, held.cots))),
            target=0,
            tol=0,
        ),
    ]

    def plots(out_dir):
        from probetraj.plot import plot_pooling_auroc, plot_trajectories

        for d, ex in extras.items():
            plot_trajectories(ex["trajectories"], ex["labels"], Path(out_dir) / f"trajectories_{d}.png", title=d)
        plot_pooling_auroc(rows, POOLINGS, Path(out_dir) / "auroc_per_pooling.png")

    return {
        "claims": claims,
        "checks": checks,
        "metrics": rows,
        "seeds": seeds,
        "plots": plots,
        "timings": {"lm_train_s": info["train_s"]},
        "extra": {"lm": info, "skipped": {d: extras[d]["held"].skipped for d in extras}},
    }
