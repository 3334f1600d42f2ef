"""``run``: conversations under each condition, the out-of-context restatement probe, scoring.

For each brief × condition × rep one conversation runs turn by turn. After every assistant turn the
probe is asked on a **copy** of the context (``messages + [probe]``); its answer is stored in the
transcript with ``is_probe=True`` and never appended to the conversation, so the next turn's context
is exactly what it would be without the probe. Each finished conversation is appended to ``out``
(JSON lines) at once, so an interrupted run resumes where it stopped; conversations run
``concurrency`` at a time, each with its own seed, so transcripts do not depend on concurrency.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import zlib
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

import pandas as pd

from driftbench.briefs import Brief, validate_briefs
from driftbench.checker import RuleChecker, adherence_from, copied_brief, count_components, keyword_recall, word_count
from driftbench.prompts import (
    JUDGES,
    check_conditions,
    judge_message,
    probe_message,
    schedule,
    system_message,
    user_message,
)

log = logging.getLogger(__name__)
DEFAULT_CONDITIONS = ("single_shot", "neutral", "pressure", "checkpoint")
COLUMNS = ["model", "brief_id", "condition", "turn", "rep", "kind", "recall", "adherence", "complexity",
           "adherence_rule", "violations", "n_checkable", "words", "copied", "judge_violations"]


def conversation_seed(seed: int, brief_id: str, condition: str, rep: int) -> int:
    """A stable per-conversation seed (the same in every process and at any concurrency)."""
    return zlib.crc32(f"{seed}|{brief_id}|{condition}|{rep}".encode()) & 0x7FFFFFFF


def _name(backend) -> str:
    return str(getattr(backend, "name", None) or getattr(backend, "model", None) or type(backend).__name__)


def parse_judge(reply: str) -> dict | None:
    """The scores in a judge's reply (its first JSON object), or ``None`` if there are none.

    A structured (per-constraint) answer becomes ``violated`` (the indices labelled "violated") and
    ``constraint_adherence`` = 4 − their number; "stretched" counts as honoured (inferred).
    """
    start = reply.find("{")
    while start != -1:
        depth = 0
        for i in range(start, len(reply)):
            depth += {"{": 1, "}": -1}.get(reply[i], 0)
            if depth == 0:
                try:
                    d = json.loads(reply[start:i + 1])
                except json.JSONDecodeError:
                    break
                if isinstance(d, dict) and isinstance(d.get("constraints"), list):
                    try:
                        bad = [int(c["index"]) for c in d["constraints"] if c.get("label") == "violated"]
                    except (KeyError, TypeError, ValueError, AttributeError):
                        return None
                    return {"violated": bad, "constraint_adherence": max(0, 4 - len(bad))}
                if isinstance(d, dict) and isinstance(d.get("constraint_adherence"), (int, float)):
                    return d
                break
        start = reply.find("{", start + 1)
    return None


def _call(backend, messages, where: str, **sampling) -> str:
    try:
        out = backend.complete(messages, **sampling)
    except Exception as e:
        chat = sys.modules.get("paperworks.lm.chat")  # loaded whenever a ChatError can be raised
        if chat is not None and isinstance(e, chat.ChatError):
            raise chat.ChatError(f"{where}: {e}") from None
        raise
    if not isinstance(out, str):
        raise TypeError(f"{where}: the backend returned {type(out).__name__}, not a string")
    return out


def run_conversation(backend, brief: Brief, condition: str, rep: int, *, turns: int = 6, judge=None,
                     judge_prompt: str = "rubric", seed: int = 0, probe: bool = True, checker: RuleChecker | None = None,
                     keep_text: bool = False, **sampling) -> dict:
    """One conversation: returns ``{"metadata", "messages", "rows"}`` (messages include the probes,
    flagged ``is_probe``; rows: one per assistant turn)."""
    checker = checker or RuleChecker()
    cseed = conversation_seed(seed, brief.id, condition, rep)
    messages = [{"role": "system", "content": system_message()}]
    transcript = list(messages)
    rows = []
    design_turn = 0
    for t, kind in enumerate(schedule(condition, turns), 1):
        design_turn += kind != "checkpoint"
        user = {"role": "user", "content": user_message(kind, brief, design_turn)}
        messages.append(user)
        transcript.append(dict(user))
        where = f"brief {brief.id!r}, condition {condition!r}, rep {rep}, turn {t}"
        reply = _call(backend, messages, where, seed=cseed * 64 + t, **sampling)
        messages.append({"role": "assistant", "content": reply})
        transcript.append({"role": "assistant", "content": reply})
        row = {"model": _name(backend), "brief_id": brief.id, "condition": condition, "turn": t, "rep": rep,
               "kind": kind}
        viol = checker.check(brief, reply)
        row.update(adherence_rule=adherence_from(viol), violations=sum(bool(v) for v in viol),
                   n_constraints=len(brief.hard_constraints),
                   n_checkable=sum(v is not None for v in viol), complexity=count_components(reply),
                   words=word_count(reply), recall=float("nan"), copied=False, judge_violations="")
        if probe:
            probe_msgs = [*messages, {"role": "user", "content": probe_message()}]  # a copy: never kept
            answer = _call(backend, probe_msgs, where + " (probe)", seed=cseed * 64 + 32 + t, **sampling)
            transcript += [{"role": "user", "content": probe_msgs[-1]["content"], "is_probe": True},
                           {"role": "assistant", "content": answer, "is_probe": True}]
            row.update(recall=keyword_recall(brief, answer), copied=copied_brief(brief, answer))
            if keep_text:
                row["probe_answer"] = answer
        row["adherence"] = float(row["adherence_rule"])
        if judge is not None:
            jmsgs = [{"role": "user", "content": judge_message(brief, reply, judge_prompt)}]
            scores = parse_judge(_call(judge, jmsgs, where + " (judge)", seed=cseed * 64 + t))
            row["adherence"] = float(scores["constraint_adherence"]) if scores else float("nan")
            if scores and isinstance(scores.get("violated"), list):
                row["judge_violations"] = ",".join(str(int(j)) for j in scores["violated"])
        row["truth_violations"] = ",".join(str(j) for j, v in enumerate(viol) if v)
        if keep_text:
            row["proposal"] = reply
        rows.append(row)
    meta = {"brief_id": brief.id, "condition": condition, "rep": rep, "model_id": _name(backend), "seed": cseed,
            "turns": turns}
    return {"metadata": meta, "messages": transcript, "rows": rows}


def _read_done(path: Path) -> tuple[dict, int]:
    done, bad = {}, 0
    if not path.exists():
        return done, bad
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            m = rec["metadata"]
            done[(m["brief_id"], m["condition"], int(m["rep"]))] = rec
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            bad += 1  # a line cut by an interrupt: that conversation runs again
            log.warning("%s line %d: not a complete record, skipped", path, i)
    return done, bad


def run(backend, briefs, conditions: Sequence[str] = DEFAULT_CONDITIONS, turns: int = 6, reps: int = 1,
        judge=None, concurrency: int = 1, *, judge_prompt: str = "rubric", seed: int = 0, out=None, resume: bool = True, probe: bool = True,
        keep_text: bool = False, **sampling) -> pd.DataFrame:
    """Run the benchmark: every brief × condition × rep, one conversation each.

    Args:
        backend: any chat model, ``complete(messages, **sampling) -> str`` (:class:`driftbench.OpenAIChat`,
            :class:`driftbench.HFChat`, :class:`driftbench.SimulatedAssistant`, ...).
        briefs: :class:`~driftbench.briefs.Brief` s (e.g. :func:`driftbench.load_briefs`) or mappings.
        conditions: a subset of :data:`driftbench.prompts.CONDITIONS`.
        turns: design turns per multi-turn conversation (checkpoints add replies).
        reps: repetitions per brief × condition (each with its own seed).
        judge: a chat model answering the rubric judge prompt (e.g. :class:`driftbench.SimulatedJudge`);
            its ``constraint_adherence`` becomes ``adherence``; without one, the rule checker's.
        judge_prompt: ``"rubric"`` (0–4 scores) or ``"structured"`` (a label per constraint).
        concurrency: conversations in flight at once (threads).
        out: a JSON-lines file each finished conversation is appended to (transcript with the probes
            flagged ``is_probe``, and its rows); with ``resume=True`` finished ones are not re-run.
        sampling: passed to every call (``temperature``, ``max_tokens``, ...).

    Returns:
        A DataFrame, one row per assistant turn, with columns ``brief_id``, ``condition``, ``turn``,
        ``rep``, ``recall`` (probe keyword recall), ``adherence`` (0–4), ``complexity`` (components)
        and ``model``, ``kind``, ``adherence_rule``, ``violations``, ``words``, ``copied`` (probe was
        a verbatim copy of the brief), ``judge_violations``, ``truth_violations``.
    """
    if not callable(getattr(backend, "complete", None)):
        raise TypeError(f"backend must have complete(messages, **sampling) -> str, got {type(backend).__name__}")
    if judge is not None and not callable(getattr(judge, "complete", None)):
        raise TypeError(f"judge must have complete(messages, **sampling) -> str, got {type(judge).__name__}")
    briefs = validate_briefs(briefs)
    conditions = check_conditions(conditions)
    if judge_prompt not in JUDGES:
        raise ValueError(f"judge_prompt must be one of {JUDGES}, got {judge_prompt!r}")
    for name, v in (("turns", turns), ("reps", reps), ("concurrency", concurrency)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    keys = [(b, c, r) for b in briefs for c in conditions for r in range(reps)]
    done, lock = {}, threading.Lock()
    path = Path(out) if out is not None else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume:
            done, bad = _read_done(path)
            stale = {int(r["metadata"].get("turns", turns)) for r in done.values()} - {turns}
            if stale:
                raise ValueError(f"out: {path} holds conversations run with turns={sorted(stale)}, not {turns}; "
                                 "resume with the same settings or use a new file")
            if done or bad:
                log.info("resuming from %s: %d conversations done, %d damaged lines", path, len(done), bad)
                # rewrite the file without damaged lines so appends start on a clean line
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_text("".join(json.dumps(r) + "\n" for r in done.values()), encoding="utf-8")
                os.replace(tmp, path)
        elif path.exists():
            path.unlink()
    checker = RuleChecker()

    def one(key):
        b, c, r = key
        rec = run_conversation(backend, b, c, r, turns=turns, judge=judge, judge_prompt=judge_prompt, seed=seed, probe=probe,
                               checker=checker, keep_text=keep_text, **sampling)
        if path is not None:
            line = json.dumps(rec) + "\n"
            with lock, open(path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
        return rec

    pending = [k for k in keys if (k[0].id, k[1], k[2]) not in done]
    results = {(k[0].id, k[1], k[2]): done[(k[0].id, k[1], k[2])] for k in keys if (k[0].id, k[1], k[2]) in done}
    if concurrency == 1:
        for k in pending:
            results[(k[0].id, k[1], k[2])] = one(k)
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futs = {pool.submit(one, k): k for k in pending}
            finished, _ = wait(futs, return_when=FIRST_EXCEPTION)
            for f in finished:
                if f.exception() is not None:
                    for g in futs:
                        g.cancel()
                    raise f.exception()
            for f, k in futs.items():
                results[(k[0].id, k[1], k[2])] = f.result()
    rows = [row for k in keys for row in results[(k[0].id, k[1], k[2])]["rows"]]
    df = pd.DataFrame(rows)
    front = [c for c in COLUMNS if c in df.columns]
    return df[front + [c for c in df.columns if c not in front]]
