"""The teacher of the miniature: a GPT-2-style causal LM trained on the A/B mixture, cached on disk."""

from __future__ import annotations

import hashlib
import json
import logging
import time

import numpy as np
import torch

from matt.aim import _bos, _pad
from matt.transfer import _batches, _encode, lm_loss

log = logging.getLogger(__name__)


def gpt2(vocab_size: int, *, layers: int = 4, width: int = 128, heads: int = 4, n_ctx: int = 64, seed: int = 0):
    """A random GPT-2 (eager attention, so AIM can read attention weights)."""
    from transformers import AutoModelForCausalLM, GPT2Config

    cfg = GPT2Config(vocab_size=vocab_size, n_layer=layers, n_embd=width, n_head=heads, n_positions=n_ctx,
                     bos_token_id=1, eos_token_id=2, pad_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    return model


def train_lm(model, tokenizer, texts, *, steps: int, lr: float = 3e-3, batch_size: int = 32, seed: int = 0,
             warmup: int = 50) -> dict:
    """Train all weights by next-token prediction (AdamW, warm-up then cosine decay)."""
    seqs = _encode(tokenizer, texts, model.config.n_positions)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, 0.5 * (1 + np.cos(np.pi * min(s / steps, 1.0)))))
    batches = _batches(len(seqs), min(batch_size, len(seqs)), np.random.default_rng(seed))
    t0, losses = time.perf_counter(), []
    for step in range(steps):
        ids, mask = _pad([seqs[i] for i in next(batches)], _bos(tokenizer))
        loss = lm_loss(model, ids, mask)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"teacher loss is {float(loss)} at step {step + 1}: training diverged")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    return {"steps": steps, "seconds": time.perf_counter() - t0, "final_loss": float(np.mean(losses[-20:]))}


def cached_teacher(tokenizer, texts, *, key: dict, cache, **train) -> tuple:
    """Train (or load from ``cache/<hash>``) the teacher for ``key``; returns ``(model, info)``."""
    from paperworks.lm import load_local, save_local

    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = cache / f"teacher-{h}"
    if (path / "config.json").is_file() and (path / "info.json").is_file():
        model, _ = load_local(path, tokenizer=False)
        model.config._attn_implementation = "eager"
        log.info("teacher loaded from %s", path)
        return model.eval(), {**json.loads((path / "info.json").read_text()), "cached": True}
    model = gpt2(len(tokenizer), layers=key["layers"], width=key["width"], heads=key["heads"], n_ctx=key["n_ctx"],
                 seed=key["seed"])
    info = train_lm(model, tokenizer, texts, seed=key["seed"], **train)
    save_local(path, model, tokenizer)
    (path / "info.json").write_text(json.dumps(info))
    return model, {**info, "cached": False}
