"""Conditions and their Jinja2 prompts (our own wording, in ``driftbench/templates``).

A condition is a schedule of user-message kinds, one per assistant turn:

==================  ==================================================================================
``single_shot``     one turn: the brief and a request for a design
``neutral``         the brief, then "continue refining" for ``turns - 1`` turns (controls turn count)
``pressure``        the brief, then escalating novelty pressure ("make it more novel ...")
``pressure_rigor``  the same with rigor pressure ("make it more rigorous ...")
``checkpoint``      pressure, with a structured reflection checkpoint after every even turn before
                    the last (turns 2 and 4 of 6: 8 assistant replies, as in the paper)
``reinject``        pressure, with the brief re-injected into every pressure message
==================  ==================================================================================

The restatement probe (``probe.j2``) is not a condition: it is asked on a *copy* of the context and
its answer never enters the conversation (:func:`driftbench.run`).
"""

from __future__ import annotations

import functools
import re

import jinja2

from driftbench.briefs import Brief

CONDITIONS = ("single_shot", "neutral", "pressure", "pressure_rigor", "checkpoint", "reinject")
KIND_TEMPLATE = {"neutral": "neutral.j2", "pressure": "pressure.j2", "pressure_rigor": "pressure_rigor.j2",
                 "checkpoint": "checkpoint.j2", "reinject": "reinject.j2"}


@functools.cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("driftbench", "templates"), autoescape=False,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


def render(name: str, **ctx) -> str:
    """Render the template ``name`` (e.g. ``"judge.j2"``) with ``ctx``."""
    return _env().get_template(name).render(**ctx).strip()


def check_conditions(conditions) -> tuple[str, ...]:
    if isinstance(conditions, str):
        conditions = (conditions,)
    conditions = tuple(conditions)
    if not conditions:
        raise ValueError("conditions: none given")
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        raise ValueError(f"conditions: unknown condition(s) {bad}; choose from {CONDITIONS}")
    if len(set(conditions)) != len(conditions):
        raise ValueError(f"conditions: duplicates in {conditions}")
    return conditions


def schedule(condition: str, turns: int) -> list[str]:
    """The user-message kinds of ``condition`` over ``turns`` design turns (``initial`` first)."""
    check_conditions([condition])
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ValueError(f"turns must be a positive integer, got {turns!r}")
    if condition == "single_shot":
        return ["initial"]
    if condition in ("neutral", "pressure", "pressure_rigor", "reinject"):
        return ["initial"] + [condition] * (turns - 1)
    out = ["initial"]
    for t in range(2, turns + 1):
        out.append("pressure")
        if t % 2 == 0 and t < turns:
            out.append("checkpoint")
    return out


def user_message(kind: str, brief: Brief, turn: int) -> str:
    """The user message of ``kind`` at design turn ``turn`` (1-based)."""
    if kind == "initial":
        return render("initial.j2", brief_yaml=brief.to_yaml())
    return render(KIND_TEMPLATE[kind], brief_yaml=brief.to_yaml(), turn=turn)


def system_message() -> str:
    return render("system.j2")


def probe_message() -> str:
    return render("probe.j2")


JUDGES = ("rubric", "structured")


def judge_message(brief: Brief, proposal: str, kind: str = "rubric") -> str:
    """The judge prompt: ``rubric`` (the four 0–4 scores and the violated constraints) or ``structured``
    (one satisfied / stretched / violated label per constraint). Both are blind to model and condition."""
    if kind not in JUDGES:
        raise ValueError(f"judge kind must be one of {JUDGES}, got {kind!r}")
    return render("judge.j2" if kind == "rubric" else "judge_structured.j2", brief_yaml=brief.to_yaml(),
                  proposal=proposal)


_MARKERS = [("probe", "restate the hard constraints of the original research brief"), ("checkpoint", "Checkpoint."),
            ("reinject", "Reminder, the original brief"), ("pressure_rigor", "rigorous"), ("pressure", "novel"),
            ("pressure", "bolder"), ("neutral", "Continue refining"), ("initial", "Here is a research brief"),
            ("judge", "scoring a research proposal"),
            ("judge_structured", "checking a research proposal against each hard constraint")]


def message_kind(text: str) -> str:
    """Which of our prompts a user message is (what the simulated assistants and judges read)."""
    for kind, marker in _MARKERS:
        if marker in text:
            return kind
    return "other"


def yaml_block(text: str) -> str | None:
    m = re.search(r"```yaml\n(.*?)```", text, re.S)
    return m.group(1) if m else None


def text_block(text: str) -> str | None:
    m = re.search(r"```text\n(.*?)\n```", text, re.S)
    return m.group(1) if m else None
