"""CLI verbs on a user's data: ``hierwm fit data.path=LATENTS`` trains and saves a model;
``hierwm rollout model=MODEL.pt data.path=LATENTS`` rolls a saved model out (no training data needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from paperworks import Claim, check_int


def _data(cfg):
    from hierwm.data import LatentSequenceDataset, make_dataset

    if cfg.data.get("path"):
        return LatentSequenceDataset(str(cfg.data.path))
    return make_dataset(check_int(cfg.data.n, "data.n", minimum=1), seed=int(cfg.seed), length=int(cfg.data.length))


def run_fit(cfg, out_dir: Path | None = None) -> dict:
    from hierwm import FlatWorldModel, HierarchicalWorldModel, train

    data = _data(cfg)
    c, h, w = data.frame_shape
    kw = {"frame_shape": (c, h, w), "coarse_shape": (c, h // 2, w // 2), "coarse_stride": int(cfg.model.coarse_stride),
          "action_dim": int(data.actions.shape[-1]), "dim": int(cfg.model.dim)}
    if cfg.model.kind not in ("hier", "flat"):
        raise ValueError(f"model.kind must be 'hier' or 'flat', got {cfg.model.kind!r}")
    model = (HierarchicalWorldModel(**kw, width=int(cfg.model.width)) if cfg.model.kind == "hier"
             else FlatWorldModel(**kw, match_width=int(cfg.model.width))).to(str(cfg.device))
    ck = Path(out_dir) / "checkpoint.pt" if out_dir is not None else None
    hist = train(model, data, objective=str(cfg.objective), steps=check_int(cfg.steps, "steps", minimum=1),
                 batch_size=int(cfg.batch_size), seed=int(cfg.seed), checkpoint=ck, resume=bool(cfg.resume))
    if out_dir is not None:
        model.save(Path(out_dir) / "model.pt")
    losses = hist["losses"]
    return {"claims": [], "checks": [Claim.check("model_saved", "The trained model was written (model.pt).",
                                                 "steps trained", float(len(losses)), target=float(cfg.steps))],
            "metrics": [{"step": i, "loss": v} for i, v in enumerate(losses)]}


def run_rollout(cfg, out_dir: Path | None = None) -> dict:
    from hierwm import FlatWorldModel, HierarchicalWorldModel

    if not cfg.get("model"):
        raise ValueError("hierwm rollout needs model=PATH (a file written by `hierwm fit`)")
    doc = torch.load(str(cfg.model), map_location="cpu", weights_only=True)
    cls = {"HierarchicalWorldModel": HierarchicalWorldModel, "FlatWorldModel": FlatWorldModel}.get(doc.get("class"))
    if cls is None:
        raise ValueError(f"{cfg.model} does not hold a hierwm model")
    model = cls.load(str(cfg.model)).to(str(cfg.device))
    data = _data(cfg)
    c0, hz = check_int(cfg.context, "context", minimum=2), check_int(cfg.horizon, "horizon", minimum=1)
    if data.frames.shape[1] < c0 - 1 + hz:
        raise ValueError(f"sequences have {data.frames.shape[1]} frames; context {c0} and horizon {hz} need "
                         f"{c0 - 1 + hz} actions")
    n = min(len(data), check_int(cfg.n, "n", minimum=1))
    frames, actions = data.get_batch(torch.arange(n))
    pred = model.rollout(frames[:, :c0], actions[:, c0 - 1:c0 - 1 + hz], horizon=hz, steps=int(cfg.sampler_steps),
                         stabilization=float(cfg.stabilization),
                         clip=None if cfg.get("clip") is None else float(cfg.clip), generator=torch.Generator().manual_seed(int(cfg.seed)))
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        np.savez(Path(out_dir) / "rollouts.npz", rollouts=pred.cpu().numpy())
    rows = []
    if frames.shape[1] >= c0 + hz:
        err = ((pred.cpu() - frames[:, c0:c0 + hz]) ** 2).mean(dim=(0, 2, 3, 4))
        rows = [{"step": i + 1, "mse": float(e)} for i, e in enumerate(err)]
    return {"claims": [], "checks": [Claim.check("rollouts_written", "Rollouts were sampled (rollouts.npz).",
                                                 "sequences", float(n), target=float(n))], "metrics": rows}


__all__ = ["run_fit", "run_rollout"]
