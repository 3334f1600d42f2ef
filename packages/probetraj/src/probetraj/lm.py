"""The tiny reasoning model of the miniature: a GPT-2 trained on the :class:`ReasoningWorld` language,
and its own rollouts, labelled by its own answers.

Model, tokenizer and batched generation come from :mod:`paperworks.lm` (``tiny_model``,
``word_tokenizer``, ``generate_with_states``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from paperworks.lm import generate_with_states
from paperworks.lm.tiny import tiny_model, word_tokenizer
from probetraj.world import END_THINK, THINK, ReasoningWorld, vocabulary

log = logging.getLogger(__name__)


def world_tokenizer():
    """The word-level tokenizer of the world's vocabulary (``<|end|>`` is eos; ``<think>`` and
    ``</think>`` are whole tokens)."""
    tok = word_tokenizer(vocabulary(), chat_template=None, punctuation=False, model_max_length=128)
    tok.add_tokens([THINK, END_THINK])  # already in the vocabulary: matched whole, before punctuation splitting
    return tok


def build_model(tokenizer, *, width: int = 128, layers: int = 3, heads: int = 4, n_ctx: int = 96, seed: int = 0):
    """A random GPT-2 (no dropout) sized for the miniature (``width=128, layers=3``: ≈0.6M parameters)."""
    return tiny_model(
        "gpt2",
        len(tokenizer),
        width=width,
        layers=layers,
        heads=heads,
        n_ctx=n_ctx,
        seed=seed,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )


def train_lm(
    model,
    tokenizer,
    worlds: list[ReasoningWorld],
    *,
    steps: int = 600,
    batch: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    device: str = "cpu",
) -> list[float]:
    """Next-token training on fresh generator traces of ``worlds`` (mixed evenly); returns the losses.

    AdamW, linear warm-up (30 steps) then cosine decay; a non-finite loss stops with the step named.
    """
    g = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 30) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )
    pad = tokenizer.pad_token_id
    losses = []
    for step in tqdm(range(steps), desc="train lm", disable=None):
        texts = []
        for k, w in enumerate(worlds):
            n = batch // len(worlds) + (k < batch % len(worlds))
            texts += [t.text for t in w.sample(n, seed=int(g.integers(2**31)))]
        enc = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        T = max(map(len, enc))
        ids = torch.full((len(enc), T), pad, dtype=torch.long)
        for i, e in enumerate(enc):
            ids[i, : len(e)] = torch.tensor(e)
        att = (ids != pad).long()
        labels = ids.masked_fill(att == 0, -100)
        loss = model(input_ids=ids.to(device), attention_mask=att.to(device), labels=labels.to(device)).loss
        if not torch.isfinite(loss):
            raise FloatingPointError(f"train_lm: non-finite loss at step {step}")
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if step % 100 == 0:
            log.info("lm step %d loss %.3f", step, losses[-1])
    model.eval()
    return losses


@dataclass
class RolloutSet:
    """A model's own rollouts: CoT states (stopping before ``</think>``), labels from its answers."""

    cot_states: list[np.ndarray]
    prompt_states: np.ndarray  # (n, d) the state at the end of the prompt (it chose the first CoT token)
    labels: np.ndarray
    groups: np.ndarray
    cots: list[str]
    unfaithful: np.ndarray  # the CoT's last stance phrase points away from the model's answer
    harmful: np.ndarray
    skipped: dict = field(default_factory=dict)

    def __len__(self):
        return len(self.labels)

    def subset(self, idx) -> RolloutSet:
        idx = np.asarray(idx)
        return RolloutSet(
            [self.cot_states[i] for i in idx],
            self.prompt_states[idx],
            self.labels[idx],
            self.groups[idx],
            [self.cots[i] for i in idx],
            self.unfaithful[idx],
            self.harmful[idx],
            self.skipped,
        )


def sample_rollouts(
    model,
    tokenizer,
    world: ReasoningWorld,
    prompts: list[tuple[int, str]],
    n: int,
    *,
    layer: int,
    seed: int = 0,
    batch: int = 250,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
) -> RolloutSet:
    """``n`` rollouts at ``temperature`` (cycling over ``prompts``), labelled by the model's own answers.

    Rollouts without ``</think>``, with an empty CoT or an unreadable answer are skipped and counted.
    """
    end_id = tokenizer.convert_tokens_to_ids(END_THINK)
    todo = [prompts[k % len(prompts)] for k in range(n)]
    cot_states, p_states, labels, groups, cots, unfaithful, harmful = [], [], [], [], [], [], []
    skipped = {"no_end_think": 0, "empty_cot": 0, "bad_answer": 0}
    for i0 in range(0, n, batch):
        chunk = todo[i0 : i0 + batch]
        gen = generate_with_states(
            model,
            tokenizer,
            [p for _, p in chunk],
            max_new_tokens=max_new_tokens,
            layers=[layer],
            do_sample=True,
            temperature=temperature,
            seed=seed * 100003 + i0,
        )
        S = next(iter(gen.states.values())).numpy()  # the one layer asked for
        for j, (g, p) in enumerate(chunk):
            toks = gen.tokens[j][gen.mask[j]].tolist()
            if end_id not in toks:
                skipped["no_end_think"] += 1
                continue
            m = toks.index(end_id)
            if m == 0:
                skipped["empty_cot"] += 1
                continue
            text = gen.texts[j]
            lab = world.label(p, text)
            if lab is None:
                skipped["bad_answer"] += 1
                continue
            cot = text.split(END_THINK, 1)[0].strip()
            cot_states.append(S[j, 1 : m + 1])
            p_states.append(S[j, 0])
            labels.append(lab)
            groups.append(g)
            cots.append(cot)
            stance = world.text_stance(cot)
            unfaithful.append(stance is not None and stance != lab)
            harmful.append(world.domain == "safety" and world.harmful(p))
    if sum(skipped.values()):
        log.info("%s rollouts skipped: %s", world.domain, skipped)
    return RolloutSet(
        cot_states,
        np.array(p_states),
        np.array(labels),
        np.array(groups),
        cots,
        np.array(unfaithful),
        np.array(harmful),
        skipped,
    )
