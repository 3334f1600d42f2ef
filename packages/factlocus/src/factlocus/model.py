"""Tiny Hugging Face recall models: built from configs (nothing downloads), trained or hand-planted.

``train_recall_model`` trains a ``GPT2LMHeadModel`` (or ``LlamaForCausalLM``) on the answer token of
every prompt of a :class:`~factlocus.data.FactWorld` until recall is (near) perfect -- memorisation
is the task. ``plant_recall_circuit`` instead *sets* the weights of a GPT-2 so that recall is done by
one known MLP (``attn0`` gathers the prompt, ``mlp{layer}`` looks the fact up, every other module
writes zero): the ground truth the patching tools are validated against.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from factlocus.data import FactWorld, PromptSet
from paperworks import check_float, check_int
from paperworks.lm import ModelAccess

log = logging.getLogger(__name__)


def build_model(vocab_size: int, *, width: int = 64, layers: int = 2, heads: int = 4, kv_heads: int | None = None,
                arch: str = "gpt2", n_ctx: int = 8, seed: int = 0) -> nn.Module:
    """A randomly initialised causal LM from a config: ``arch="gpt2"`` or ``"llama"`` (``kv_heads <
    heads`` gives grouped-query attention)."""
    if width % heads:
        raise ValueError(f"width={width} must be divisible by heads={heads}")
    torch.manual_seed(seed)
    if arch == "gpt2":
        cfg = GPT2Config(vocab_size=vocab_size, n_positions=n_ctx, n_embd=width, n_layer=layers, n_head=heads,
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
                         bos_token_id=0, eos_token_id=0, pad_token_id=0)
        model = GPT2LMHeadModel(cfg)
    elif arch == "llama":
        kv = kv_heads or heads
        if heads % kv:
            raise ValueError(f"heads={heads} must be divisible by kv_heads={kv}")
        cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=width, intermediate_size=4 * width,
                          num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                          max_position_embeddings=n_ctx, tie_word_embeddings=True,
                          bos_token_id=0, eos_token_id=0, pad_token_id=0)
        model = LlamaForCausalLM(cfg)
    else:
        raise ValueError(f"arch must be 'gpt2' or 'llama', got {arch!r}")
    return model.eval()


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def recall_accuracy(model: nn.Module, data: PromptSet, batch: int = 4096) -> float:
    """Fraction of prompts whose top-1 next token is the answer."""
    acc = ModelAccess(model)
    hits = 0
    for i in range(0, len(data), batch):
        logits, _ = acc.run(data.input_ids[i:i + batch])
        hits += int((logits.argmax(-1) == data.answer_ids[i:i + batch]).sum())
    return hits / len(data)


def train_recall_model(world: FactWorld, *, width: int = 64, layers: int = 2, heads: int = 4, arch: str = "gpt2",
                       kv_heads: int | None = None, steps: int = 2000, lr: float = 3e-3, batch: int = 1024,
                       target: float = 0.999, check_every: int = 100, restarts: int = 0, restart_lr: float = 1.0,
                       plateau: float | None = None, seed: int = 0, device: str = "cpu"):
    """Train a tiny causal LM to recall every fact of ``world``; returns ``(model, tokenizer, info)``.

    The loss is the cross-entropy of the answer token at the last prompt position, over every set of
    :meth:`FactWorld.training_sets` (the one-hop facts; with bridges also the bridge facts and the
    training compositions -- each step draws ``batch`` prompts spread over the sets in proportion to
    their sizes). Training stops once recall on *every* training set reaches ``target`` or after
    ``steps`` AdamW steps (cosine schedule with a 50-step warm-up). If the target is not reached, up to
    ``restarts`` further cosine cycles of ``steps`` steps each continue from the current weights and
    optimiser state, cycle ``k`` peaking at ``lr * restart_lr**k`` (warm restarts: near the capacity
    limit a model can end a cycle a few percent short of the target, and another cycle finishes the job).
    ``plateau``: stop once a whole cycle raised recall (the smallest over the training sets) by less than
    ``plateau`` over the previous cycle's end -- the model is *saturated*: more of the same training does not
    recall more facts (the precondition of a measurement on an over-capacity model, which cannot reach the
    target). A cycle anneals the learning rate to zero, so a plateau *within* a cycle says nothing; only a
    further cycle from a warm restart can show one. A slow escape from a long plateau after the last cycle
    is not excluded.
    ``info`` holds ``steps`` (all cycles), ``cycles`` (how many ran), ``recall`` (one-hop facts),
    ``cycle_recalls`` (recall at the end of each completed cycle), ``saturated`` (at least two cycles completed
    and the last raised recall by less than ``plateau``; ``False`` without ``plateau``),
    ``recall_sets`` (per training set), ``params``, the capacity load ``lambda`` of the one-hop facts
    and, for two-hop worlds, ``two_hop_heldout`` (top-1 accuracy on the held-out compositions, which
    training never saw). ``device``: where to train (``"cpu"``, ``"cuda"``, ``"auto"``).
    """
    from paperworks import resolve_device

    if not isinstance(world, FactWorld):
        raise TypeError(f"world must be a FactWorld, got {type(world).__name__}")
    steps, batch = check_int(steps, "steps", minimum=1), check_int(batch, "batch", minimum=1)
    target = check_float(target, "target", minimum=0.0, maximum=1.0, open_minimum=True)   # 1.5 would train forever
    if restarts < 0 or not 0 < restart_lr <= 1:
        raise ValueError(f"need restarts >= 0 and 0 < restart_lr <= 1, got restarts={restarts}, restart_lr={restart_lr}")
    if plateau is not None:
        plateau = check_float(plateau, "plateau", minimum=0.0, maximum=1.0, open_minimum=True)
    tok = world.tokenizer()
    sets = world.training_sets(tok)
    n_ctx = max(8, *(ps.input_ids.shape[1] for ps in sets.values()))
    model = build_model(len(tok), width=width, layers=layers, heads=heads, arch=arch, kv_heads=kv_heads,
                        n_ctx=n_ctx, seed=seed)
    dev = torch.device(resolve_device(device))
    model.to(dev).train()
    tensors = {k: (ps.input_ids.to(dev), ps.answer_ids.to(dev)) for k, ps in sets.items()}
    sizes = {k: len(ps) for k, ps in sets.items()}
    total = sum(sizes.values())
    per_set = {k: max(1, round(min(batch, total) * n / total)) for k, n in sizes.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, betas=(0.9, 0.98))
    # one cosine cycle of `steps` steps (50-step warm-up) per cycle; cycle k peaks at lr * restart_lr**k
    shape = lambda t: (restart_lr ** (t // steps) * min(1.0, (t % steps + 1) / 50)  # noqa: E731
                       * 0.5 * (1 + math.cos(math.pi * (t % steps) / steps)))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, shape)
    gen = torch.Generator().manual_seed(seed)
    recalls, done, cycle_recalls = {k: 0.0 for k in sets}, 0, []
    for step in range(steps * (1 + restarts)):
        loss = 0.0
        for k, (ids, ans) in tensors.items():
            idx = torch.randint(0, sizes[k], (per_set[k],), generator=gen).to(dev)
            logits = _last_logits(model, ids[idx])
            loss = loss + nn.functional.cross_entropy(logits, ans[idx], reduction="sum")
        loss = loss / sum(per_set.values())
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training diverged at step {step} (loss {loss.item()})")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        done = step + 1
        if done % check_every == 0 or done % steps == 0:
            model.eval()
            recalls = {k: recall_accuracy(model, ps) for k, ps in sets.items()}
            model.train()
            if min(recalls.values()) >= target:
                break
            if done % steps == 0:
                cycle_recalls.append(min(recalls.values()))
                if plateau is not None and len(cycle_recalls) >= 2 and cycle_recalls[-1] - cycle_recalls[-2] < plateau:
                    break
    model.eval()
    from factlocus.capacity import capacity_load

    params = count_parameters(model)
    saturated = (plateau is not None and len(cycle_recalls) >= 2 and cycle_recalls[-1] - cycle_recalls[-2] < plateau)
    info = {"steps": done, "cycles": -(-done // steps), "recall": recalls["one_hop"], "recall_sets": recalls, "params": params,
            "cycle_recalls": cycle_recalls, "saturated": bool(saturated),
            "lambda": capacity_load(world.n_facts, world.n_answers, params)}
    if world.n_bridges and world.holdout > 0:
        info["two_hop_heldout"] = recall_accuracy(model, world.two_hop_prompt_set(tok, "heldout"))
    log.info("trained %s d=%d: recall %s after %d steps (lambda=%.3f)", world.motif, width,
             {k: round(v, 4) for k, v in recalls.items()}, done, info["lambda"])
    return model, tok, info


def _last_logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Next-token logits at the last position (only that position goes through the LM head)."""
    try:
        return model(input_ids=ids, logits_to_keep=1).logits[:, -1]
    except TypeError:  # models without logits_to_keep
        return model(input_ids=ids).logits[:, -1]


@torch.no_grad()
def plant_recall_circuit(world: FactWorld, *, layer: int = 1, layers: int = 2, gain: float = 30.0):
    """A GPT-2 whose weights are *set* (not trained) so that ``mlp{layer}`` does the recall.

    Construction: one-hot token embeddings (no positions); ``attn0`` attends uniformly (zero q/k) and
    copies the normalised token vectors of the prompt into a separate "gathered" subspace; then, with
    every other module writing zero, ``mlp{layer}`` has one hidden unit per fact whose input weight is
    that fact's normalised residual at the last position and whose threshold sits half-way between its
    own fact's score and the best other fact's, and writes ``gain`` onto the answer's (tied) unembedding
    direction. Recall is exact when every fact's template is unique.

    Returns ``(model, tokenizer)``.
    """
    if not 0 <= layer < layers:
        raise ValueError(f"layer must be in [0, {layers}), got {layer}")
    tok = world.tokenizer()
    V = len(tok)
    F = world.n_facts
    d = 2 * V
    cfg = GPT2Config(vocab_size=V, n_positions=8, n_embd=d, n_layer=layers, n_head=1, n_inner=max(F, 4),
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                     activation_function="relu")
    model = GPT2LMHeadModel(cfg).eval()
    for p in model.parameters():
        p.zero_()
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            m.weight.fill_(1.0)
    tr = model.transformer
    tr.wte.weight[:, :V] = torch.eye(V)
    # attn0: c_attn = [q | k | v], q = k = 0 -> uniform causal attention; v = copy token dims
    a0 = tr.h[0].attn
    a0.c_attn.weight[:V, 2 * d:2 * d + V] = torch.eye(V)
    a0.c_proj.weight[:V, V:2 * V] = torch.eye(V)
    # templates: the normalised residual entering mlp{layer} at the last position, for every fact
    data = world.prompt_set(tok)
    acc = ModelAccess(model)
    captured = {}

    def grab(mod, args):
        captured["x"] = args[0][:, -1].clone()

    h = tr.h[layer].mlp.register_forward_pre_hook(grab)
    acc.run(data.input_ids)
    h.remove()
    x = captured["x"]  # (F, d), the ln_2 output = what mlp{layer} reads
    w = x / x.norm(dim=1, keepdim=True)
    scores = w @ x.T  # (F units, F facts)
    own = scores.diag()
    other = scores.clone()
    other.fill_diagonal_(-np.inf)
    # facts with identical templates (the same prompt) cannot be separated
    if bool((other.max(1).values >= own - 1e-6).any()):
        raise ValueError("world: two facts share a prompt; the planted circuit needs unique prompts")
    thr = 0.5 * (own + other.max(1).values)
    mlp = tr.h[layer].mlp
    scale = 1.0 / (own - thr)  # unit fires 1.0 on its own fact, <= 0 on every other
    mlp.c_fc.weight[:, :F] = (w * scale[:, None]).T
    mlp.c_fc.bias[:F] = -thr * scale
    mlp.c_proj.weight[torch.arange(F), data.answer_ids] = gain
    return model, tok
