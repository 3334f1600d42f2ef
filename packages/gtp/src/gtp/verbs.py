"""CLI verbs on a user's data and saved models:

``gtp fit data.path=FILE.npz`` trains the four models on a D4RL-keyed ``.npz`` and writes ``models.pt``;
``gtp plan model=models.pt env=ENV_ID planner=gtp n=16`` runs a planner on saved models (no data needed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gtp.data import load_dataset
from gtp.experiments import make_planner
from gtp.fit import LearnedModels, fit_models
from gtp.rollout import evaluate
from paperworks import Claim, check_int


def run_fit(cfg, out_dir: Path | None = None) -> dict:
    if cfg.data.get("path") is None:
        raise ValueError("gtp fit needs data.path=FILE.npz (keys observations, actions, rewards, "
                         "next_observations, terminals)")
    data = load_dataset(str(cfg.data.path))
    f = cfg.fit
    m = fit_models(data, horizon=check_int(f.horizon, "fit.horizon"), prior_steps=int(f.prior_steps),
                   model_steps=int(f.model_steps), value_steps=int(f.value_steps), gamma=float(cfg.gamma),
                   n_step=check_int(f.n_step, "fit.n_step"), seed=int(cfg.seed), device=str(cfg.device))
    path = m.save(Path(out_dir) / "models.pt") if out_dir is not None else None
    return {"claims": [], "checks": [
        Claim.check("models_fitted", "The four models were fitted on the user's transitions and saved (models.pt).",
                    "transitions used", float(m.info["n_transitions"]), threshold=1.0, better="higher")],
        "metrics": [{k: v for k, v in m.info.items() if isinstance(v, (int, float))}],
        "extra": {"data": str(cfg.data.path), "skipped_transitions": int(data["skipped"]),
                  "models": str(path) if path else None}}


def run_plan(cfg, out_dir: Path | None = None) -> dict:
    if cfg.get("model") is None:
        raise ValueError("gtp plan needs model=PATH (a models.pt written by `gtp fit` or an experiment)")
    m = LearnedModels.load(str(cfg.model)).to(str(cfg.device))
    planner = make_planner(str(cfg.planner), m, check_int(cfg.n, "n"), cfg)
    res = evaluate(str(cfg.env), planner, episodes=check_int(cfg.episodes, "episodes"), seed=int(cfg.seed))
    return {"claims": [], "checks": [
        Claim.check("episodes_run", "The planner ran every episode on the saved models.", "episodes",
                    float(len(res["returns"])), target=float(cfg.episodes))],
        "metrics": [{"episode": i, "return": float(r), "success": float(s)}
                    for i, (r, s) in enumerate(zip(res["returns"], res["success"]))],
        "extra": {"mean_return": float(np.mean(res["returns"])), "success_rate": float(np.mean(res["success"])),
                  "plan_ms": res["plan_ms"], "model": str(cfg.model)}}


__all__ = ["run_fit", "run_plan"]
