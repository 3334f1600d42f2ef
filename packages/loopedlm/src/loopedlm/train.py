"""Training a looped model or its feedforward control on generated arithmetic (AdamW, constant LR)."""

from __future__ import annotations

import logging

import numpy as np
import torch

from loopedlm.data import arithmetic_batches
from loopedlm.model import LoopedLM

log = logging.getLogger(__name__)


def train(model: LoopedLM, *, steps: int, batch: int = 32, t: int = 32, lr: float = 3e-3, seed: int = 0,
          n_val: int = 64) -> dict:
    """Train in place; returns ``{"train_loss", "val_loss"}`` (validation on held-out generated lines)."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    val = arithmetic_batches(np.random.default_rng(10_000 + seed), n_val, t)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    loss = torch.tensor(float("nan"))
    for step in range(steps):
        x = arithmetic_batches(rng, batch, t)
        loss = model(x, labels=x).loss
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training diverged at step {step} (loss {float(loss)})")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0:
            log.info("step %d loss %.3f", step, loss.item())
    model.eval()
    with torch.no_grad():
        vl = float(model(val, labels=val).loss)
    return {"train_loss": float(loss), "val_loss": vl}
