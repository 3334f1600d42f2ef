"""Tokenizer transfer: initialise, AIM warm-up, then LM training; bits-per-byte evaluation.

``transfer`` follows the transformers idiom: a model and its tokenizer in, a model and the new
tokenizer out (``save_pretrained`` both and reload them with ``from_pretrained``).
"""

from __future__ import annotations

import copy
import logging
import math
import time

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from matt.aim import AIMLoss, _bos, _max_len, _pad, attention_outputs, check_causal_lm, check_eager, resolve_layers
from matt.align import check_fast
from matt.compute import ShapeFlops
from matt.init import focus_init, fvt_init, overlap, random_init

log = logging.getLogger(__name__)

INITS = ("focus", "fvt", "random")
TRAIN = ("embeddings", "lora", "all")


def _texts(texts, name="texts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, not one string")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"{name} must be a non-empty list of strings")
    return texts


def _encode(tokenizer, texts, max_len: int) -> list[list[int]]:
    """``[bos] + tokens`` of each text, split into windows of at most ``max_len`` (each starting with bos)."""
    bos = _bos(tokenizer)
    out = []
    for t in texts:
        ids = tokenizer(t, add_special_tokens=False)["input_ids"]
        for i in range(0, max(len(ids), 1), max_len - 1):
            out.append([bos] + ids[i:i + max_len - 1])
    return out


@torch.no_grad()
def bits_per_byte(model, tokenizer, texts, *, batch_size: int = 32) -> float:
    """Bits per UTF-8 byte of ``texts`` under ``model``: ``Σ −log₂ p(token | prefix) / Σ bytes``.

    Every token of a text is predicted from ``[bos]`` onwards, so the number does not depend on
    how the tokenizer cuts the text (per-token losses do and must not be compared across tokenizers).
    Texts longer than the model's context are scored in windows, each restarting from ``bos``.
    """
    check_causal_lm(model)
    check_fast(tokenizer)
    texts = _texts(texts)
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    seqs = _encode(tokenizer, texts, _max_len(model))
    nats = 0.0
    for i in range(0, len(seqs), batch_size):
        ids, mask = _pad(seqs[i:i + batch_size], _bos(tokenizer))
        ids, mask = ids.to(dev), mask.to(dev)
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
        lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
        nats -= float((lp * mask[:, 1:]).sum())
    model.train(was)
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    return nats / math.log(2) / n_bytes


def lm_loss(model, ids, mask) -> torch.Tensor:
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    tgt = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)


def _batches(n: int, batch_size: int, rng):
    while True:
        order = rng.permutation(n)
        for i in range(0, n - batch_size + 1, batch_size):
            yield order[i:i + batch_size]


def _embedding_params(model) -> list[torch.nn.Parameter]:
    ps = [model.get_input_embeddings().weight]
    out = model.get_output_embeddings()
    if out is not None and out.weight is not ps[0]:
        ps.append(out.weight)
    return ps


def _set_trainable(model, train: str):
    """Freeze per ``train``; returns the (possibly peft-wrapped) model and its trainable parameters."""
    if train == "all":
        for p in model.parameters():
            p.requires_grad_(True)
        return model, [p for p in model.parameters()]
    if train == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear"))
    for p in model.parameters():
        p.requires_grad_(False)
    emb = _embedding_params(model)
    for p in emb:
        p.requires_grad_(True)
    extra = [p for n, p in model.named_parameters() if "lora_" in n]
    for p in extra:
        p.requires_grad_(True)
    return model, emb + extra


def _freeze_rows_hook(rows: torch.Tensor):
    def hook(g):
        g = g.clone()
        g[rows] = 0
        return g
    return hook


def transfer(model, tokenizer, new_tokenizer, texts, *, init: str = "focus", aim_steps: int = 100,
             lm_steps: int = 400, aim_layers=None, freeze_overlap: bool = False, train: str = "embeddings",
             lr: float = 3e-3, aim_lr: float | None = None, batch_size: int = 16, warmup: int = 10, seed: int = 0,
             callback=None, progress: bool = False):
    """Transfer ``model`` from ``tokenizer`` to ``new_tokenizer`` (MATT, arXiv 2510.21954).

    1. initialise the new embeddings (``init``: FOCUS-lite, FVT or random) on a copy of ``model``;
    2. AIM warm-up for ``aim_steps`` (embeddings only; overlapping tokens frozen if ``freeze_overlap``);
    3. LM training for ``lm_steps`` on ``texts`` tokenised by ``new_tokenizer``, training ``train``:
       ``"embeddings"`` (input embeddings and LM head; the body stays bit-identical), ``"lora"``
       (embeddings + LoRA adapters, merged at the end) or ``"all"``.

    AdamW (no weight decay), linear warm-up over ``warmup`` steps, then a constant rate (so a run of
    ``n`` steps is the prefix of a longer one with the same seed). ``callback(info)`` is called after
    every step with ``{"step", "phase", "loss", "train_s", "flops", "model"}`` (``train_s``: training wall
    time so far; ``flops``: counted matrix-product FLOPs so far, forward and backward, the teacher's
    forward passes for AIM targets included; see :mod:`matt.compute`). The totals are also left on the
    student as ``student.train_flops``.

    Returns:
        ``(student, new_tokenizer)``; ``model`` itself is left unchanged.
    """
    # validation
    check_causal_lm(model)
    check_fast(tokenizer, "tokenizer")
    check_fast(new_tokenizer, "new_tokenizer")
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if train not in TRAIN:
        raise ValueError(f"train must be one of {TRAIN}, got {train!r}")
    for name, v in (("aim_steps", aim_steps), ("lm_steps", lm_steps), ("warmup", warmup), ("seed", seed)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    aim_lr = lr if aim_lr is None else aim_lr
    for name, v in (("lr", lr), ("aim_lr", aim_lr)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    if not isinstance(freeze_overlap, bool):
        raise TypeError(f"freeze_overlap must be a bool, got {type(freeze_overlap).__name__}")
    texts = _texts(texts)
    if aim_steps:
        check_eager(model, "model")
        resolve_layers(model, aim_layers)
    batch_size = min(batch_size, len(texts))

    # initialisation
    student = copy.deepcopy(model)
    student.train()
    if init == "focus":
        focus_init(student, tokenizer, new_tokenizer, texts)
    elif init == "fvt":
        fvt_init(student, tokenizer, new_tokenizer)
    else:
        random_init(student, tokenizer, new_tokenizer, seed=seed)
    train_s, step, flops = 0.0, 0, 0

    def run_phase(phase, n, loss_fn, params, rate, rng, cost):
        nonlocal train_s, step, flops
        opt = torch.optim.AdamW(params, lr=rate, weight_decay=0.0, betas=(0.9, 0.98))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(warmup, 1)))
        batches = _batches(len(texts), batch_size, rng)
        for _ in tqdm(range(n), disable=not progress, desc=phase):
            t0 = time.perf_counter()
            idx = next(batches)
            loss = loss_fn([texts[i] for i in idx])
            if not torch.isfinite(loss):
                raise FloatingPointError(f"{phase} loss is {float(loss)} at step {step + 1}: training diverged")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            train_s += time.perf_counter() - t0
            flops += cost()
            step += 1
            if callback is not None:
                callback({"step": step, "phase": phase, "loss": loss.item(), "train_s": train_s, "flops": flops,
                          "model": student})

    # AIM warm-up
    if aim_steps:
        aim = AIMLoss(model, tokenizer, layers=aim_layers)
        for p in student.parameters():
            p.requires_grad_(False)
        emb = _embedding_params(student)
        hooks = []
        for p in emb:
            p.requires_grad_(True)
            if freeze_overlap:
                rows = torch.as_tensor(sorted(overlap(tokenizer, new_tokenizer)), device=p.device)
                hooks.append(p.register_hook(_freeze_rows_hook(rows)))
        dev = next(student.parameters()).device

        def aim_work(ids, mask):
            zs = attention_outputs(student, ids, mask, aim.layers, stop=True)
            sum((z.float() ** 2).sum() for z in zs).backward()
            for p in emb:
                p.grad = None

        def teacher_work(ids, mask):
            with torch.no_grad():
                attention_outputs(model, ids, mask, aim.layers, stop=True)

        s_flops = ShapeFlops(aim_work, token_id=_bos(new_tokenizer), device=dev)
        t_flops = ShapeFlops(teacher_work, token_id=_bos(tokenizer), device=next(model.parameters()).device)

        def aim_cost():
            sh = aim.last_shapes
            return s_flops(*sh["student"]) + sum(t_flops(*x) for x in sh["teacher"])

        run_phase("aim", aim_steps, lambda b: aim(student, new_tokenizer, b), emb, aim_lr,
                  np.random.default_rng([seed, 1]), aim_cost)
        for h in hooks:
            h.remove()
        if aim.skipped:
            log.info("AIM skipped %d lines that could not be aligned", aim.skipped)
        student.aim_skipped = aim.skipped

    # LM training
    if lm_steps:
        seqs = _encode(new_tokenizer, texts, _max_len(student))
        if len(seqs) != len(texts):  # long texts were windowed: train on the windows
            texts = [str(i) for i in range(len(seqs))]
        lookup = dict(zip(texts, seqs))
        dev = next(student.parameters()).device
        pad = _bos(new_tokenizer)
        wrapped, params = _set_trainable(student, train)
        shape = [None]

        def lm_step(batch):
            ids, mask = _pad([lookup[t] for t in batch], pad)
            shape[0] = tuple(ids.shape)
            return lm_loss(wrapped, ids.to(dev), mask.to(dev))

        def lm_work(ids, mask):
            lm_loss(wrapped, ids, mask).backward()
            for p in params:
                p.grad = None

        l_flops = ShapeFlops(lm_work, token_id=pad, device=dev)
        run_phase("lm", lm_steps, lm_step, params, lr, np.random.default_rng([seed, 2]), lambda: l_flops(*shape[0]))
        if train == "lora":
            student = wrapped.merge_and_unload()
    for p in student.parameters():
        p.requires_grad_(True)
    student.eval()
    student.train_flops = flops
    return student, new_tokenizer
