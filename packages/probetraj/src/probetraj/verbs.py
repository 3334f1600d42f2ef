"""``probetraj score model=DIR probe_file=FILE data.path=ROLLOUTS.jsonl``: probe trajectories of a user's
rollouts under a saved probe and model (no training data needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paperworks import Claim
from probetraj.activations import HFActivationSource
from probetraj.evaluate import auroc
from probetraj.features import FEATURES, trajectory_features
from probetraj.probe import PooledProbe
from probetraj.world import load_rollouts


def run_score(cfg, out_dir: Path | None = None) -> dict:
    from paperworks.lm.tiny import load_local

    for key in ("model", "probe_file"):
        if cfg.get(key) is None:
            raise ValueError(f"probetraj score needs {key}= (see `probetraj score --help`)")
    if cfg.data.get("path") is None:
        raise ValueError("probetraj score needs data.path=ROLLOUTS.jsonl")
    model, tok = load_local(str(cfg.model))
    if tok is None:
        raise ValueError(f"model={cfg.model} holds no tokenizer")
    probe = PooledProbe.load(str(cfg.probe_file))
    src = HFActivationSource(model, tok, layer=int(cfg.layer))
    data = load_rollouts(str(cfg.data.path), end_think=str(cfg.end_think))
    if not data.prompts:
        raise ValueError(f"data.path={cfg.data.path}: no usable rollouts (skipped: {data.skipped})")
    rows, scores = [], []
    for i, (p, c) in enumerate(zip(data.prompts, data.cots)):
        h = src.cot_states(p, f"{c} {cfg.end_think}", end_think=str(cfg.end_think))
        traj = probe.trajectory(h)
        f = trajectory_features(traj)
        scores.append(float(probe.decision_function([h])[0]))
        rows.append(
            {
                "rollout": i,
                "group": str(data.groups[i]),
                "label": data.labels[i],
                "tokens": len(traj),
                "pooled_score": scores[-1],
                **dict(zip(FEATURES, map(float, f))),
            }
        )
    labs = [r["label"] for r in rows]
    extra = {"n_rollouts": len(rows), "skipped": {k: v for k, v in data.skipped.items() if v}}
    if all(lab is not None for lab in labs) and len(set(labs)) == 2:
        extra["auroc_pooled_score"] = auroc(np.array(labs), np.array(scores))
    check = Claim.check(
        "every_kept_rollout_scored",
        "Every rollout kept by the loader was scored.",
        "rollouts scored - kept",
        len(rows) - len(data.prompts),
        target=0,
        tol=0,
    )
    return {"claims": [], "checks": [check], "metrics": rows, "extra": extra}
