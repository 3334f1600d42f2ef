"""``train(model, dataset, *, objective, steps)``: DF / TF / DF→TF training, checkpoints, resume, DDP."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import torch

from hierwm.noise import check_objective
from paperworks import atomic_torch_save

log = logging.getLogger(__name__)


def _batch(dataset, idx):
    if hasattr(dataset, "get_batch"):
        return dataset.get_batch(idx)
    items = [dataset[int(i)] for i in idx]
    return torch.stack([f for f, _ in items]), torch.stack([a for _, a in items])


def train(model, dataset, *, objective: str, steps: int, batch_size: int = 16, lr: float = 2e-3,
          positions: int | None = 6, seed: int = 0, switch: float = 0.7, checkpoint: str | Path | None = None,
          checkpoint_every: int = 100, resume: bool = False, grad_clip: float = 1.0, progress: bool = False) -> dict:
    """Train ``model`` for ``steps`` AdamW steps (cosine learning rate) on random batches of ``dataset``.

    ``objective``: ``tf``, ``df`` or ``df_tf`` (DF for the first ``switch`` of the steps, then TF: the
    same step budget). ``positions``: low-level frames per sequence per step. ``checkpoint``: a file
    written every ``checkpoint_every`` steps (model, optimiser, RNG); ``resume=True`` continues from it
    to the same result. Under ``torchrun`` (an initialised process group) the model is wrapped in DDP,
    each rank draws its own batches and rank 0 writes the checkpoint. A NaN loss stops training with
    an error naming the step.

    Returns:
        ``{"losses": [...], "steps": steps}``.
    """
    check_objective(objective)
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if len(dataset) < 1:
        raise ValueError("dataset is empty")
    if resume and (checkpoint is None or not Path(checkpoint).exists()):
        raise FileNotFoundError(f"resume=True but no checkpoint at {checkpoint}")
    dist = torch.distributed.is_available() and torch.distributed.is_initialized()
    rank = torch.distributed.get_rank() if dist else 0
    net = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True) if dist else model
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    gen = torch.Generator().manual_seed(int(seed) * 1000 + rank)
    start, losses = 0, []
    if resume:
        doc = torch.load(checkpoint, map_location="cpu", weights_only=True)
        model.load_state_dict(doc["model"])
        opt.load_state_dict(doc["optimizer"])
        sched.load_state_dict(doc["scheduler"])
        gen.set_state(doc["generator"])
        start, losses = int(doc["step"]), list(doc["losses"])
        log.info("resumed from %s at step %d", checkpoint, start)
    loss_fn = net if dist else model.loss  # DDP all-reduces gradients through forward() (= loss)
    model.train()
    it = range(start, steps)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, disable=None, desc=f"train {objective}")
    for step in it:
        idx = torch.randint(0, len(dataset), (batch_size,), generator=gen)
        frames, actions = _batch(dataset, idx)
        loss = loss_fn(frames, actions, objective=objective, generator=gen, progress=step / steps, positions=positions)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training diverged: the loss is {float(loss.detach())} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        done = step + 1
        if checkpoint is not None and rank == 0 and (done % checkpoint_every == 0 or done == steps):
            _save(checkpoint, model, opt, sched, gen, done, losses)
    model.eval()
    return {"losses": losses, "steps": steps}


def _save(path, model, opt, sched, gen, step, losses):
    path = Path(path)
    atomic_torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                       "generator": gen.get_state(), "step": step, "losses": losses}, path)
