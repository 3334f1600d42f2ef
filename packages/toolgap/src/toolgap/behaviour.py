"""Behaviour: model-adaptive necessity (k samples without tools), actions (greedy, tools offered), and
the hidden states of the prompts the actions were decided on.

- **Necessity** (paper's definition, as in the official code): a question is *unnecessary* for a model
  iff at least ``r`` of ``k`` samples at temperature ``T`` without tools are correct, ``r = k`` by default.
- **Action**: the greedy reply with tools offered through ``apply_chat_template(tools=...)`` contains a
  parsable tool call (:func:`toolgap.parse.detect_call`); mismatch = necessity ≠ action.

Both run on a local Hugging Face causal LM (batched, left-padded, KV-cached generation from
:func:`paperworks.lm.generate_with_states`) or on any chat backend with ``complete`` (e.g.
:class:`paperworks.lm.OpenAIChat`; tools are then sent as the request's ``tools``). Probes need local weights.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from paperworks.lm.generate import encode_prompts, generate_with_states
from toolgap.model import render
from toolgap.parse import detect_call
from toolgap.world import TOOLS, Question

_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _norm(s: str) -> str:
    return re.sub(r"[\s,]", "", s.lower())


def is_correct(text: str, answer: str) -> bool:
    """Whether ``text`` answers ``answer``: numeric answers must equal the last number written (spaces
    and thousands commas ignored); text answers must appear in it (case and spaces ignored)."""
    a, t = _norm(answer), _norm(text)
    if _NUM.fullmatch(a):
        nums = _NUM.findall(t)
        return bool(nums) and float(nums[-1]) == float(a)
    return bool(a) and a in t


def _questions(questions) -> list[Question]:
    if isinstance(questions, (str, bytes, Mapping)) or not isinstance(questions, Sequence) or not len(questions):
        raise ValueError("questions must be a non-empty list of toolgap.Question")
    out = []
    for i, q in enumerate(questions):
        if not isinstance(q, Question):
            raise TypeError(f"questions[{i}] must be a toolgap.Question, got {type(q).__name__}")
        out.append(q)
    return out


def check_tools(tools) -> list[dict]:
    """Validate tools in JSON-schema form: ``[{"type": "function", "function": {"name", "parameters":
    {"type": "object", ...}}}]`` (the bare ``{"name", "parameters"}`` form is accepted too)."""
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence) or not len(tools):
        raise ValueError("tools must be a non-empty list of JSON-schema function specs")
    for i, t in enumerate(tools):
        f = t.get("function", t) if isinstance(t, Mapping) else None
        if not isinstance(f, Mapping) or not isinstance(f.get("name"), str) or not f["name"]:
            raise ValueError(f"tools[{i}] must be a JSON-schema function spec with a 'name', got {t!r}")
        p = f.get("parameters")
        if not isinstance(p, Mapping) or p.get("type") != "object" or not isinstance(p.get("properties", {}), Mapping):
            raise ValueError(f"tools[{i}] ({f['name']}): 'parameters' must be a JSON schema of type 'object'")
    return list(tools)


def _check_template(tokenizer):
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise ValueError("tokenizer: has no chat_template, so tools cannot be offered through "
                         "apply_chat_template(tools=...) (set tokenizer.chat_template, e.g. "
                         "toolgap.model.TOOL_CHAT_TEMPLATE)")


def _is_chat(model) -> bool:
    return not isinstance(model, torch.nn.Module) and callable(getattr(model, "complete", None))


def _stops(tokenizer, extra=()) -> list[int]:
    ids = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    vocab = tokenizer.get_vocab()
    return ids + [vocab[t] for t in extra if t in vocab]


def _generate(model, tokenizer, prompts, *, temperature, max_new_tokens, batch_size, seed, stop=()):
    texts = []
    for s in range(0, len(prompts), batch_size):
        gen = generate_with_states(model, tokenizer, prompts[s:s + batch_size], max_new_tokens=max_new_tokens,
                                   layers=[], do_sample=temperature > 0, temperature=temperature or 1.0,
                                   seed=seed + s, stop_ids=_stops(tokenizer, stop))
        texts += [t.strip() for t in gen.texts]
    return texts


def necessity(model, tokenizer, questions, *, k: int = 5, temperature: float = 0.7, min_correct: int | None = None,
              batch_size: int = 64, max_new_tokens: int = 16, seed: int = 0) -> pd.DataFrame:
    """Model-adaptive tool necessity from ``k`` samples at ``temperature`` without tools.

    ``necessary = (correct < r)`` with ``r = min_correct`` (default ``k``: unnecessary iff every sample
    is correct). ``temperature=0`` is greedy (all samples equal). Local models sample ``batch_size``
    sequences per ``generate`` call (each prompt repeated ``k`` times); chat backends get one request
    per sample.

    Returns:
        DataFrame, one row per question: ``id, group, domain, annotator, correct, k, min_correct,
        necessary, samples`` (the ``k`` texts).
    """
    qs = _questions(questions)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    r = k if min_correct is None else min_correct
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 1 <= r <= k:
        raise ValueError(f"min_correct must be an integer in 1..k={k}, got {min_correct!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not (
            np.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    k, r = int(k), int(r)
    if _is_chat(model):
        msgs = [[{"role": "user", "content": q.question}] for q in qs for _ in range(k)]
        kw = {"temperature": float(temperature)}
        texts = (model.complete_many(msgs, **kw) if hasattr(model, "complete_many")
                 else [model.complete(m, **kw) for m in msgs])
    else:
        _check_template(tokenizer)
        prompts = [render(tokenizer, q.question) for q in qs for _ in range(k)]
        texts = _generate(model, tokenizer, prompts, temperature=float(temperature), max_new_tokens=max_new_tokens,
                          batch_size=batch_size, seed=seed)
    rows = []
    for i, q in enumerate(qs):
        samples = texts[i * k:(i + 1) * k]
        c = sum(is_correct(t, q.answer) for t in samples)
        rows.append({"id": q.id, "group": q.group, "domain": q.domain, "annotator": q.annotator, "correct": c,
                     "k": k, "min_correct": r, "necessary": c < r, "samples": samples})
    return pd.DataFrame(rows)


def actions(model, tokenizer, questions, *, tools=None, batch_size: int = 64, max_new_tokens: int = 24,
            style: str = "auto") -> pd.DataFrame:
    """Greedy replies with ``tools`` offered (default: the toy's ``calc`` and ``kb``), and whether each calls one.

    Returns:
        DataFrame: ``id, group, domain, annotator, called, tool, unparsable, text``; ``df.attrs["unparsable"]``
        counts replies with a call marker that did not parse (they count as no call).
    """
    qs = _questions(questions)
    tools = check_tools(TOOLS if tools is None else tools)
    if _is_chat(model):
        msgs = [[{"role": "user", "content": q.question}] for q in qs]
        texts = (model.complete_many(msgs, temperature=0.0, tools=tools) if hasattr(model, "complete_many")
                 else [model.complete(m, temperature=0.0, tools=tools) for m in msgs])
    else:
        _check_template(tokenizer)
        prompts = [render(tokenizer, q.question, tools=tools) for q in qs]
        texts = _generate(model, tokenizer, prompts, temperature=0.0, max_new_tokens=max_new_tokens,
                          batch_size=batch_size, seed=0)
    rows, bad = [], 0
    for q, t in zip(qs, texts):
        call, unparsable = detect_call(t, style)
        bad += unparsable
        rows.append({"id": q.id, "group": q.group, "domain": q.domain, "annotator": q.annotator,
                     "called": call is not None, "tool": call["name"] if call else None,
                     "unparsable": unparsable, "text": t})
    df = pd.DataFrame(rows)
    df.attrs["unparsable"] = int(bad)
    return df


def _position(ids: list[int], position, pattern_ids, i: int) -> int:
    n = len(ids)
    if pattern_ids is None:
        p = position + n if position < 0 else position
        if not 0 <= p < n:
            raise ValueError(f"position {position} is outside prompt {i} ({n} tokens)")
        return p
    m = len(pattern_ids)
    for s in range(n - m, -1, -1):
        if ids[s:s + m] == pattern_ids:
            return s + m - 1
    raise ValueError(f"position: the pattern is missing from prompt {i}")


@torch.no_grad()
def hidden_states(model, tokenizer, prompts, *, position: int | str = -1, tools=None, batch_size: int = 64) -> np.ndarray:
    """The residual stream at every layer (0 = embeddings, as HF's ``output_hidden_states``) at one
    position of each prompt.

    Prompts are encoded exactly as :func:`actions` sends them (a :class:`~toolgap.world.Question` or a
    user message string goes through the chat template with ``tools`` and the generation prompt),
    left-padded with position ids counted from each prompt's first token, so every state equals the
    prompt run alone.

    Args:
        position: an index into the prompt's tokens (``-1``: the last prompt token) or a string
            pattern: the last token of its last occurrence (a prompt without it is an error).

    Returns:
        float32 array ``(n, layers + 1, d)``.
    """
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not len(prompts):
        raise ValueError("prompts must be a non-empty list of questions or user-message strings")
    _check_template(tokenizer)
    tools = check_tools(TOOLS if tools is None else tools)
    texts = [render(tokenizer, p.question if isinstance(p, Question) else p, tools=tools) for p in prompts]
    if isinstance(position, bool) or not isinstance(position, (int, np.integer, str)):
        raise TypeError(f"position must be an int or a string pattern, got {type(position).__name__}")
    pattern = None
    if isinstance(position, str):
        pattern = tokenizer(position, add_special_tokens=False)["input_ids"]
        if not pattern:
            raise ValueError("position: the pattern encodes to no tokens")
    dev = next(model.parameters()).device
    out = []
    was = model.training
    model.eval()
    try:
        for s in range(0, len(texts), batch_size):
            ids, att = encode_prompts(tokenizer, texts[s:s + batch_size])
            lens = att.sum(1).tolist()
            P = ids.shape[1]
            idx = [P - n + _position(ids[j, P - n:].tolist(), position, pattern, s + j) for j, n in enumerate(lens)]
            pos = (att.cumsum(-1) - 1).clamp_min(0)
            o = model(input_ids=ids.to(dev), attention_mask=att.to(dev), position_ids=pos.to(dev),
                      output_hidden_states=True)
            hs = torch.stack(o.hidden_states, 1)  # (B, L+1, P, d)
            rows = torch.arange(len(idx))
            out.append(hs[rows, :, torch.tensor(idx)].float().cpu().numpy())
    finally:
        model.train(was)
    return np.concatenate(out)
