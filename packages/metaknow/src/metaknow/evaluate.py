"""Running a model on users' JSONL benchmarks and judging the answers; capability by multiple choice."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from metaknow.judges import AwarenessJudge, HarmJudge, RefusalJudge

log = logging.getLogger("metaknow")


def load_jsonl(path, *, required=("id", "prompt")) -> tuple[list[dict], list[tuple[int, str]]]:
    """Rows of a JSONL file that have the ``required`` fields; returns ``(rows, skipped)`` where
    ``skipped`` lists ``(line number, why)`` for bad lines (not JSON, missing or non-string fields)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path: no such file {path}")
    rows, skipped = [], []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            skipped.append((n, f"not JSON ({e.msg})"))
            continue
        if not isinstance(row, dict):
            skipped.append((n, "not an object"))
            continue
        miss = [k for k in required if row.get(k) in (None, "")]
        if miss:
            skipped.append((n, f"missing {', '.join(miss)}"))
            continue
        row["id"] = str(row["id"]) if "id" in row else str(n)
        rows.append(row)
    if skipped:
        log.warning("%s: skipped %d bad row(s): %s", path, len(skipped), ", ".join(f"line {n} ({w})" for n, w in skipped[:10]))
    return rows, skipped


def as_benchmark(benchmark) -> tuple[list[dict], list]:
    """A benchmark as rows ``{"id", "prompt", ...}``: a JSONL path (AgentHarm-, StrongREJECT-, OR-Bench-style
    rows with ``id`` and ``prompt``) or a list of such dicts; rows missing fields are skipped and counted."""
    if isinstance(benchmark, (str, Path)):
        return load_jsonl(benchmark)
    if isinstance(benchmark, Mapping) or not isinstance(benchmark, Sequence):
        raise ValueError("benchmark must be a JSONL path or a list of {'id', 'prompt'} dicts")
    rows, skipped = [], []
    for i, r in enumerate(benchmark):
        if not isinstance(r, Mapping) or not isinstance(r.get("prompt"), str) or r.get("id") in (None, ""):
            skipped.append((i, "missing id or prompt"))
            continue
        rows.append({**r, "id": str(r["id"])})
    if skipped:
        log.warning("benchmark: skipped %d row(s) missing id or prompt", len(skipped))
    return rows, skipped


def evaluate(backend, benchmark, *, judges=None, samples: int = 1, seed: int = 0, system: str | None = None,
             max_tokens: int = 256, temperature: float | None = None) -> pd.DataFrame:
    """Answer every benchmark prompt ``samples`` times and judge each answer.

    Args:
        backend: a chat model (``complete(messages, **sampling) -> str``; ``complete_many`` is used when
            present): :class:`~paperworks.lm.OpenAIChat`, :class:`~paperworks.lm.HFChat`, a stub.
        benchmark: JSONL path or rows with ``id`` and ``prompt`` (other fields are kept as columns).
        judges: ``{"refused": RefusalJudge(), "verbalized": AwarenessJudge(), "harm": HarmJudge()}`` by
            default (rules); a list of judges uses each judge's ``column``.
        samples: answers per prompt (sampled at ``temperature``, default 1.0 when ``samples > 1``, else greedy).

    Returns:
        ``DataFrame`` with ``prompt_id, sample, seed, prompt, response`` and one column per judge;
        ``harm`` is NaN for refused answers. ``df.attrs["skipped"]`` counts the skipped benchmark rows.
    """
    if not callable(getattr(backend, "complete", None)):
        raise TypeError(f"backend must have complete(messages) -> str, got {type(backend).__name__}")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    rows, skipped = as_benchmark(benchmark)
    if not rows:
        raise ValueError("benchmark: no usable rows (each needs 'id' and 'prompt')")
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("benchmark: prompt ids must be unique")
    if judges is None:
        judges = {"refused": RefusalJudge(), "verbalized": AwarenessJudge(), "harm": HarmJudge()}
    elif not isinstance(judges, Mapping):
        judges = {j.column: j for j in judges}
    temp = temperature if temperature is not None else (1.0 if samples > 1 else 0.0)
    convs = []
    for r in rows:
        m = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": r["prompt"]}]
        convs.append(m)
    out = []
    for s in range(samples):
        kw = {"temperature": temp, "max_tokens": max_tokens}
        if hasattr(backend, "complete_many"):
            try:
                answers = backend.complete_many(convs, seed=seed * 1000 + s, **kw)
            except TypeError:
                answers = backend.complete_many(convs, **kw)
        else:
            answers = [backend.complete(m, **kw) for m in convs]
        for r, a in zip(rows, answers):
            rec = {"prompt_id": r["id"], "sample": s, "seed": seed, "prompt": r["prompt"], "response": a}
            rec.update({k: v for k, v in r.items() if k not in ("id", "prompt")})
            for col, j in judges.items():
                if isinstance(j, HarmJudge):
                    continue
                rec[col] = j(r["prompt"], a)
            out.append(rec)
    for col, j in judges.items():
        if isinstance(j, HarmJudge):
            for rec in out:
                rec[col] = math.nan if rec.get("refused") else j(rec["prompt"], rec["response"])
    df = pd.DataFrame(out)
    df.attrs["skipped"] = len(skipped)
    return df


def multiple_choice_accuracy(backend, questions) -> float:
    """Accuracy on multiple-choice JSONL rows ``{"question", "choices": [...], "answer": index or letter}``:
    the model is asked for a letter; the first A-Z letter of the reply is its answer. Bad rows are skipped."""
    if isinstance(questions, (str, Path)):
        questions, _ = load_jsonl(questions, required=("question", "choices", "answer"))
    letters = "ABCDEFGHIJ"
    right, n = 0, 0
    for q in questions:
        ch = q.get("choices")
        if not isinstance(ch, list) or not 2 <= len(ch) <= len(letters):
            continue
        ans = q["answer"]
        ans = letters[ans] if isinstance(ans, int) and 0 <= ans < len(ch) else str(ans).strip().upper()[:1]
        body = q["question"] + "\n" + "\n".join(f"{letters[i]}. {c}" for i, c in enumerate(ch)) + "\nAnswer with the letter."
        reply = backend.complete([{"role": "user", "content": body}], temperature=0.0, max_tokens=4)
        got = next((c for c in reply.upper() if c in letters[:len(ch)]), None)
        right += got == ans
        n += 1
    if n == 0:
        raise ValueError("questions: no usable multiple-choice rows")
    return right / n


def summarize(df: pd.DataFrame) -> dict:
    """Refusal rate, harm of non-refused answers and verbalisation rate of an :func:`evaluate` frame."""
    return {"refusal": float(df["refused"].mean()), "verbalized": float(df["verbalized"].mean()),
            "harm_nonrefused": float(np.nanmean(df["harm"])) if df["harm"].notna().any() else math.nan}
