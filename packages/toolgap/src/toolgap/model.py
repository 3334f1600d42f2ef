"""The toy's models: a word-level tokenizer with a tool-aware chat template, and weak/strong GPT-2s
trained from scratch on :class:`~toolgap.world.ToolWorld` transcripts.

Model, tokenizer, saving and loading come from :mod:`paperworks.lm` (``tiny_model``,
``word_tokenizer``, ``save_local``/``load_local``): a trained model is one self-contained Hugging Face
folder (weights, config, tokenizer and its chat template) that loads without the world.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import torch
from tqdm import tqdm

from paperworks import check_int
from paperworks.lm.tiny import load_local, save_local, tiny_model, word_tokenizer
from toolgap.world import CALL, END_CALL, ToolWorld

log = logging.getLogger(__name__)

#: a tool-aware chat template: tools listed by name in a system turn (rendered from JSON-schema specs)
TOOL_CHAT_TEMPLATE = (
    "{%- if tools %}<|system|> tools :{% for t in tools %} "
    "{{ (t['function'] if t['function'] is defined else t)['name'] }}{% endfor %} <|end|>\n{% endif -%}"
    "{%- for m in messages -%}<|{{ m['role'] }}|> {{ m['content'] }} <|end|>\n{%- endfor -%}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif -%}"
)
SIZES = {  # the paper's miniature: weak (2 layers, d = 64) and strong (6 layers, d = 192)
    "weak": dict(width=64, layers=2, heads=4),
    "strong": dict(width=192, layers=6, heads=6),
}
LR = {"weak": 4e-3, "strong": 3e-3}  # peak learning rates (the deeper model takes the smaller one)


def tool_tokenizer(world: ToolWorld, *, chat_template: str | None = TOOL_CHAT_TEMPLATE):
    """The word-level tokenizer of ``world`` (``<call>``/``</call>`` whole tokens) with the tool-aware template."""
    tok = word_tokenizer(world.words(), chat_template=chat_template, model_max_length=64)
    tok.add_tokens([CALL, END_CALL])  # already in the vocabulary: matched whole before punctuation splitting
    return tok


def render(tokenizer, question: str, *, tools=None) -> str:
    """The prompt a model sees: the user's question through the chat template with the generation prompt."""
    return tokenizer.apply_chat_template([{"role": "user", "content": question}], tools=tools,
                                         add_generation_prompt=True, tokenize=False)


def _example(world, tok, g, tools_spec):
    domain = "arithmetic" if g.random() < 0.5 else "kb"
    tools = bool(g.random() < 0.5)
    q = world.training_question(g, domain, tools=tools)
    gen, _ = world.target(q, tools=tools)  # the tool's result would be masked: no gradient, so not fed
    p = tok(render(tok, q.question, tools=tools_spec if tools else None), add_special_tokens=False)["input_ids"]
    a = tok(" " + gen, add_special_tokens=False)["input_ids"]
    ids = p + a + [tok.eos_token_id]
    return ids, [-100] * len(p) + a + [tok.eos_token_id]


def train_tool_model(world: ToolWorld, size: str = "weak", *, steps: int | None = None, batch: int = 64,
                     lr: float | None = None, seed: int = 0, device: str = "cpu", tokenizer=None):
    """Train a GPT-2 of ``size`` (``"weak"``: 2 layers, d = 64; ``"strong"``: 6 layers, d = 192) from
    scratch on ``world``'s transcripts (half arithmetic, half facts; half with tools offered).

    Next-token loss on the assistant's tokens only (the prompt is masked; a call's tool result would
    be masked too, so it is not fed at all: generation stops at ``</call>``), AdamW, 50 warm-up
    steps then cosine decay; a non-finite loss stops the run naming the step.

    Returns:
        ``(model, tokenizer)`` (eval mode); ``model.train_losses`` holds the losses.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    steps = check_int(1500 if steps is None else steps, "steps", minimum=1)
    lr = LR[size] if lr is None else lr
    batch = check_int(batch, "batch", minimum=1)
    if isinstance(lr, bool) or not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    from toolgap.world import TOOLS

    tok = tokenizer or tool_tokenizer(world)
    model = tiny_model("gpt2", len(tok), n_ctx=64, seed=seed, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                       **SIZES[size]).to(device)
    g = np.random.default_rng(seed + 7919)
    torch.manual_seed(seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    losses = []
    for step in tqdm(range(steps), desc=f"train {size}", disable=None):
        ex = [_example(world, tok, g, TOOLS) for _ in range(batch)]
        T = max(len(i) for i, _ in ex)
        ids = torch.full((batch, T), tok.pad_token_id, dtype=torch.long)
        lab = torch.full((batch, T), -100, dtype=torch.long)
        for j, (i, y) in enumerate(ex):
            ids[j, :len(i)] = torch.tensor(i)
            lab[j, :len(y)] = torch.tensor(y)
        att = (torch.arange(T)[None] < torch.tensor([len(i) for i, _ in ex])[:, None]).long()
        loss = model(input_ids=ids.to(device), attention_mask=att.to(device), labels=lab.to(device)).loss
        if not torch.isfinite(loss):
            raise FloatingPointError(f"train_tool_model: non-finite loss at step {step}")
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if step % 250 == 0:
            log.info("%s step %d loss %.3f", size, step, losses[-1])
    model.eval()
    model.train_losses = losses
    return model, tok


def save_tool_model(path, model, tokenizer):
    """Save a trained model and its tokenizer (with the chat template) into the folder ``path``."""
    return save_local(path, model, tokenizer)


def load_tool_model(path):
    """Load ``(model, tokenizer)`` saved by :func:`save_tool_model` (offline, no world needed)."""
    model, tok = load_local(path)
    if tok is None:
        raise FileNotFoundError(f"path: {path} has no tokenizer (save it with save_tool_model)")
    return model, tok
