"""CLI verbs: ``latentwam train data.path=LEROBOT_ROOT data.image_key=KEY`` (train on your data, save the
model) and ``latentwam evaluate model=FILE`` (closed-loop success of a saved model, no data needed)."""

from __future__ import annotations

from pathlib import Path

from latentwam.data import load_lerobot
from latentwam.run import make_model
from latentwam.train import evaluate, train
from latentwam.wam import ChunkPolicy
from paperworks import Claim, check_int


def run_train(cfg, out_dir: Path | None = None) -> dict:
    if cfg.data.get("path") is None or cfg.data.get("image_key") is None:
        raise ValueError("latentwam train needs data.path=LEROBOT_ROOT and data.image_key=KEY")
    demos = load_lerobot(str(cfg.data.path), image_key=str(cfg.data.image_key),
                         future_offsets=tuple(cfg.model.future_offsets), chunk=int(cfg.model.chunk),
                         image_size=int(cfg.data.image_size))
    model = make_model(str(cfg.arm), cfg, action_dim=demos.action_dim, proprio_dim=demos.proprio_dim)
    if model.channels != demos.frame_shape[0]:
        raise ValueError(f"the dataset's frames have {demos.frame_shape[0]} channels; the model expects 3")
    ckpt = Path(out_dir) / "checkpoint.pt" if out_dir is not None else None
    hist = train(model, demos, steps=check_int(cfg.train.steps, "train.steps"),
                 batch_size=check_int(cfg.train.batch_size, "train.batch_size"), lr=float(cfg.train.lr),
                 seed=int(cfg.seed), checkpoint=cfg.get("checkpoint") or ckpt,
                 checkpoint_every=int(cfg.checkpoint_every), resume=bool(cfg.resume))
    if out_dir is not None:
        model.save(Path(out_dir) / "model.pt")
    first, last = hist[0]["action"], hist[-1]["action"]
    check = Claim.check("trained", "The model trained for the requested steps (model.pt written).", "steps",
                        float(len(hist)), target=float(int(cfg.train.steps)), tol=0.0)
    return {"claims": [], "checks": [check],
            "metrics": [{"samples": len(demos), "dropped": demos.dropped, "episodes": demos.n_episodes,
                         "first_action_loss": first, "last_action_loss": last}],
            "extra": {"samples": len(demos), "dropped": demos.dropped}}


def run_evaluate(cfg, out_dir: Path | None = None) -> dict:
    if cfg.get("model") is None:
        raise ValueError("latentwam evaluate needs model=FILE (saved by a run or `latentwam train`)")
    model = ChunkPolicy.load(str(cfg.model))
    res = evaluate(str(cfg.env), model, episodes=check_int(cfg.episodes, "episodes"), seed=int(cfg.seed),
                   exec_horizon=check_int(cfg.exec_horizon, "exec_horizon"))
    check = Claim.check("episodes_run", "Every requested episode was run.", "episodes", float(res["episodes"]),
                        target=float(int(cfg.episodes)), tol=0.0)
    row = {"model": str(cfg.model), "env": str(cfg.env), **res}
    return {"claims": [], "checks": [check], "metrics": [row], "extra": {"evaluation": row}}
