"""One domain, one seed of the miniature: probes, trajectories, monitors and their AUROCs.

Everything a monitor is scored on comes from held-out rollouts of the trained model, labelled by the
model's own answers; probes are trained on templates or on other rollouts whose prompts are disjoint
from the held-out ones; the outcome classifiers use GroupKFold by prompt.
"""

from __future__ import annotations

import numpy as np

from probetraj.activations import HFActivationSource
from probetraj.baselines import BestPositionReadout, KeywordMonitor
from probetraj.evaluate import auroc, bootstrap_auroc, grouped_folds, out_of_fold, outcome_classifier, tpr_at_fpr
from probetraj.features import FEATURES, trajectory_features
from probetraj.lm import RolloutSet, sample_rollouts
from probetraj.probe import POOLINGS, PooledProbe
from probetraj.world import CONCEPTS, ReasoningWorld, template_dataset

CONCEPT_OF = {d: c for c, (d, _) in CONCEPTS.items()}
LEVEL = ("mean", "final")  # the level-only feature set that volatility/trend/steady state must improve on


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=float)))


def evaluate_trajectories(
    trajs, prompt_end, y, groups, cots, unfaithful, keywords, *, seed: int = 0, n_splits: int = 5
) -> dict:
    """AUROCs (and TPR@5%FPR) of the trajectory monitor and its baselines on the same folds."""
    folds = grouped_folds(y, groups, n_splits=n_splits, seed=seed)
    leak = sum(len(set(groups[tr]) & set(groups[te])) for tr, te in folds)
    scores = {
        "trajectory": out_of_fold(outcome_classifier(), trajs, y, folds),
        "level_only": out_of_fold(outcome_classifier(features=LEVEL), trajs, y, folds),
        "best_position": out_of_fold(BestPositionReadout(), trajs, y, folds),
        "prompt_end": np.asarray(prompt_end),
        "keyword_text": out_of_fold(KeywordMonitor(keywords=tuple(keywords)), cots, y, folds),
    }
    out = {"leaked_prompts": leak}
    for k, s in scores.items():
        out[f"auroc_{k}"] = auroc(y, s)
        out[f"tpr5_{k}"] = tpr_at_fpr(y, s)
        u = np.asarray(unfaithful, bool)
        out[f"auroc_unfaithful_{k}"] = auroc(y[u], s[u]) if u.sum() >= 4 else float("nan")
    lo, hi = bootstrap_auroc(y, scores["trajectory"], groups, seed=seed, n=300)
    out["auroc_trajectory_lo"], out["auroc_trajectory_hi"] = lo, hi
    out["scores"] = scores
    return out


def run_domain(model, tok, world: ReasoningWorld, cfg, seed: int) -> tuple[dict, dict]:
    """One seed of one domain: returns ``(row, extras)`` (``extras`` holds arrays for the plots)."""
    src = HFActivationSource(model, tok, layer=int(cfg.probe.layer))
    rng = np.random.default_rng(seed)
    prompts = world.prompts(len(world._all_prompts()), seed=seed)
    n_dyn = int(round(len(prompts) * float(cfg.rollouts.dynamic_prompt_frac)))
    dyn_prompts, held_prompts = prompts[:n_dyn], prompts[n_dyn:]
    held = sample_rollouts(
        model,
        tok,
        world,
        held_prompts,
        int(cfg.rollouts.n_heldout),
        layer=src.layer,
        seed=seed,
        max_new_tokens=int(cfg.rollouts.max_new_tokens),
    )
    dyn = sample_rollouts(
        model,
        tok,
        world,
        dyn_prompts,
        int(cfg.rollouts.n_dynamic),
        layer=src.layer,
        seed=seed + 10_000,
        max_new_tokens=int(cfg.rollouts.max_new_tokens),
    )
    texts, tlabels = template_dataset(
        CONCEPT_OF[world.domain], int(cfg.templates.n), length=int(cfg.templates.length), seed=seed
    )
    tstates = src.hidden_states(texts)
    row = {
        "domain": world.domain,
        "seed": seed,
        "n_heldout": len(held),
        "n_dynamic": len(dyn),
        "kept_frac": len(held) / int(cfg.rollouts.n_heldout),
        "label_rate": float(held.labels.mean()),
        "unfaithful_rate": float(held.unfaithful.mean()),
        "template_lengths": len({len(t.split()) for t in texts}),
        "prompt_overlap": len(set(held.groups) & set(dyn.groups)),
    }
    probes = {}
    for data, (H, y) in (("template", (tstates, tlabels)), ("dynamic", (dyn.cot_states, dyn.labels))):
        for pooling in POOLINGS:
            probe = PooledProbe(
                pooling=pooling, window=int(cfg.probe.window), C=float(cfg.probe.C), random_state=seed
            ).fit(H, y)
            probes[data, pooling] = probe
            s = probe.decision_function(held.cot_states)
            row[f"auroc_{data}_{pooling}"] = auroc(held.labels, s)
            trajs = probe.trajectories(held.cot_states)
            row[f"volatility_{data}_{pooling}"] = float(
                np.mean([np.diff(p).std() if len(p) > 1 else 0.0 for p in trajs])
            )
            if world.domain == "safety":  # benign prompts, complying answers: how often does the probe fire?
                ok = (~held.harmful) & (held.labels == 0)
                row[f"benign_fpr_{data}_{pooling}"] = float(np.mean(sigmoid(s[ok]) > 0.5)) if ok.any() else float("nan")
    main = probes[str(cfg.probe.trajectory_data), str(cfg.probe.trajectory_pooling)]
    trajs = main.trajectories(held.cot_states)
    prompt_end = sigmoid([main.token_scores(h[None])[0] for h in held.prompt_states])
    kw0, kw1 = world.keywords()
    ev = evaluate_trajectories(
        trajs,
        prompt_end,
        held.labels,
        held.groups,
        held.cots,
        held.unfaithful,
        kw0 + kw1,
        seed=seed,
        n_splits=int(cfg.cv.n_splits),
    )
    scores = ev.pop("scores")
    row.update(ev)
    row["n_unfaithful"] = int(held.unfaithful.sum())
    feats = np.stack([trajectory_features(p) for p in trajs])
    for j, f in enumerate(FEATURES):
        row[f"feat_auroc_{f}"] = auroc(held.labels, feats[:, j])
    extras = {
        "trajectories": trajs,
        "labels": held.labels,
        "scores": scores,
        "probe": main,
        "held": held,
        "rng_state": int(rng.integers(2**31)),
    }
    return row, extras


def streaming_gap(src: HFActivationSource, probe, prompt: str, *, max_new_tokens: int = 60) -> float:
    """Max |live monitor score - score from one full forward of the finished text| (NaN if no CoT)."""
    res = src.monitor(prompt, probe, max_new_tokens=max_new_tokens, do_sample=True, seed=1)
    if not res.ended_think or not len(res.trajectory):
        return float("nan")
    full = probe.trajectory(src.cot_states(prompt, res.text))
    return float(np.max(np.abs(full - res.trajectory)))


__all__ = ["RolloutSet", "evaluate_trajectories", "run_domain", "sample_rollouts", "streaming_gap"]
