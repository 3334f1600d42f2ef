"""Training: one loop for MolSpecFlow and the MLP baselines, with checkpoints, resume and torchrun (DDP)."""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import numpy as np
import torch

from molspecflow.model import TASKS
from paperworks import atomic_torch_save

log = logging.getLogger(__name__)


def train(model, dataset, *, rows, steps: int, batch_size: int = 32, lr: float = 1e-3, seed: int = 0,
          tasks=TASKS, checkpoint: str | Path | None = None, checkpoint_every: int = 0, resume: bool = False,
          device: str = "cpu", log_every: int = 100) -> dict:
    """Train ``model`` for ``steps`` AdamW steps on ``dataset`` rows ``rows`` (batches drawn with ``seed``).

    ``model.loss(batch)`` is called (MolSpecFlow also gets ``tasks=`` — its observation masks).
    ``checkpoint``: a file written every ``checkpoint_every`` steps and at the end; ``resume=True``
    continues from it (it must exist) to the same result. Under ``torchrun`` (``WORLD_SIZE > 1``)
    gradients are averaged over ranks (all-reduce), each rank draws its own batches, rank 0 writes the checkpoint.
    A NaN loss stops training with the step named.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    rows = np.asarray(rows, dtype=int)
    if rows.size == 0:
        raise ValueError("no training rows")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    model.to(device)
    dist = None
    if world > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        with torch.no_grad():  # every rank starts from rank 0's weights
            for p in model.parameters():
                dist.broadcast(p.data, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * (
        0.5 * (1 + math.cos(math.pi * min(s, steps) / max(1, steps)))) + 1e-3)
    start, history = 0, []
    if resume:
        if checkpoint is None or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"resume=true but there is no checkpoint at {checkpoint}")
        blob = torch.load(checkpoint, map_location=device, weights_only=True)
        model.load_state_dict(blob["model"])
        opt.load_state_dict(blob["opt"])
        sched.load_state_dict(blob["sched"])
        start, history = blob["step"], blob["history"]
    is_flow = hasattr(model, "sample_states")
    model.train()
    for step in range(start, steps):
        # the batch of a step depends only on (seed, rank, step): a resumed run draws the same ones
        g = torch.Generator().manual_seed(seed * 1_000_003 + rank * 7919 + step)
        idx = rows[torch.randint(len(rows), (batch_size,), generator=g).numpy()]
        batch = dataset.batch(idx, device)
        loss = model.loss(batch, tasks=tasks, generator=g) if is_flow else model.loss(batch)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"the loss became {float(loss)} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if dist is not None:  # data parallel: average the gradients over ranks
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        history.append(float(loss.detach()))
        if log_every and (step + 1) % log_every == 0 and rank == 0:
            log.info("step %d/%d loss %.4f", step + 1, steps, np.mean(history[-log_every:]))
        if checkpoint is not None and rank == 0 and checkpoint_every and (step + 1) % checkpoint_every == 0:
            _save(checkpoint, model, opt, sched, step + 1, history)
    if checkpoint is not None and rank == 0:
        _save(checkpoint, model, opt, sched, steps, history)
    model.eval()
    return {"loss_first": history[0] if history else float("nan"),
            "loss_last": float(np.mean(history[-max(1, len(history) // 10):])) if history else float("nan"),
            "steps": steps}


def _save(path, model, opt, sched, step, history):
    atomic_torch_save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                       "step": step, "history": history}, path)
