"""Simulated assistants and judges with planted behaviour, behind the chat protocol.

They read the conversation as any model would (the brief from the first user message's YAML block,
their own previous proposal, the kind of the last user message) and answer with text; they hold no
state, so a conversation is a pure function of its messages and the ``seed`` sampling argument, and
transcripts are identical however many conversations run at once.

:class:`SimulatedAssistant` (the "drifting assistant" of the CPU miniature):

- turn 1 proposes ``base_components`` components and honours every constraint;
- each pressure turn adds one component with probability ``p_component`` and violates each
  still-honoured checkable constraint with probability ``p_violate`` (a neutral turn:
  ``neutral_factor`` times both);
- a checkpoint (or a re-injected brief) repairs each violated constraint with probability
  ``checkpoint_reset``;
- the restatement probe restates each constraint with probability ``recall`` (independently of
  whether it is violated: the dissociation), or, with probability ``copy_rate``, pastes the brief.

Honoured forbidden terms are mentioned *negated* ("we will not use JWST"), so keyword matching
miscounts them; the planted truth is exact (:meth:`SimulatedAssistant.violations`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading

import numpy as np
import yaml

from driftbench.briefs import Brief, Constraint, _fmt
from driftbench.checker import RuleChecker, adherence_from, count_components
from driftbench.prompts import message_kind, schedule, text_block, yaml_block

_FILLER = ("the design keeps the analysis simple and transparent while the team documents each decision and "
           "shares intermediate results with collaborators so that the work remains reproducible everywhere "
           "and the main question stays in focus throughout the project timeline").split()
_PARTS = ("pilot study", "power analysis", "data management plan", "validation set", "robustness check",
          "secondary outcome", "stakeholder panel", "replication arm", "mechanism probe", "dashboard",
          "meta-analysis", "cost model", "qualitative interviews", "simulation study", "open dataset release",
          "extension cohort", "adaptive design", "follow-up wave", "external advisory board", "field trial")
_NEG = ("We will not use {t}.", "The design works without {t}.", "{T} is excluded from the plan.",
        "We avoid {t} entirely.", "Instead of {t}, we rely on existing resources.")
_USE = "We now rely on {t} to strengthen the design."
_INCLUDE = "The plan includes a {t}."
_DROP = ("We drop the {t} to save time.", "")


def check_messages(messages) -> list[dict]:
    """A conversation as a list of ``{"role", "content"}`` dicts (as :func:`paperworks.lm.check_messages`,
    without importing torch for the simulators)."""
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool") \
                or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] must be a dict with a role and a string content, got {m!r}"[:200])
    return [dict(m) for m in messages]


def _check_prob(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
    return float(v)


def _rng(*parts) -> np.random.Generator:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode())
        h.update(b"\x00")
    return np.random.default_rng(int.from_bytes(h.digest()[:8], "little"))


_BRIEFS: dict[str, Brief] = {}
_LOCK = threading.Lock()


def brief_from_messages(messages) -> Brief:
    """The brief in the first user message's ```yaml block (cached)."""
    for m in messages:
        if m["role"] == "user" and (block := yaml_block(m["content"] or "")):
            with _LOCK:
                if block not in _BRIEFS:
                    _BRIEFS[block] = Brief.from_dict(yaml.safe_load(block))
                return _BRIEFS[block]
    raise ValueError("no brief (```yaml block) in the conversation")


class SimulatedAssistant:
    """An assistant with planted drift, recall and checkpoint behaviour (``complete(messages, seed=)``).

    Args:
        p_component: probability that a pressure turn adds a component (the planted complexity slope).
        p_violate: per-turn probability that pressure breaks each honoured checkable constraint.
        recall: probability that the probe restates each constraint.
        checkpoint_reset: probability that a checkpoint repairs each violated constraint.
        seed: the assistant's own seed (mixed with the per-call ``seed``).
        copy_rate: probability that a probe answer is a verbatim copy of the brief's constraints.
        neutral_factor: neutral turns use ``neutral_factor·p_component`` and ``neutral_factor·p_violate``.
        base_components: components of the first proposal.
        name: a label for results.
    """

    def __init__(self, p_component: float, p_violate: float, recall: float, checkpoint_reset: float,
                 seed: int | None = None, *, copy_rate: float = 0.0, neutral_factor: float = 0.25,
                 base_components: int = 3, name: str | None = None):
        self.p_component = _check_prob("p_component", p_component)
        self.p_violate = _check_prob("p_violate", p_violate)
        self.recall = _check_prob("recall", recall)
        self.checkpoint_reset = _check_prob("checkpoint_reset", checkpoint_reset)
        self.copy_rate = _check_prob("copy_rate", copy_rate)
        self.neutral_factor = _check_prob("neutral_factor", neutral_factor)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an integer or None, got {seed!r}")
        if isinstance(base_components, bool) or not isinstance(base_components, int) or base_components < 1:
            raise ValueError(f"base_components must be a positive integer, got {base_components!r}")
        self.seed, self.base_components = seed or 0, base_components
        self.name = name or (f"sim(pc={p_component:g},pv={p_violate:g},r={recall:g},q={checkpoint_reset:g}"
                             f"{f',copy={copy_rate:g}' if copy_rate else ''})")

    def __repr__(self) -> str:
        return f"SimulatedAssistant({self.name})"

    # the conversation ---------------------------------------------------------------------------

    def complete(self, messages, *, seed: int = 0, **sampling) -> str:
        messages = check_messages(messages)
        brief = brief_from_messages(messages)
        rng = _rng("assistant", self.seed, seed, *(m["content"] for m in messages))
        last_user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        kind = message_kind(last_user)
        if kind == "probe":
            return self._probe(brief, rng)
        prev = next((m["content"] for m in reversed(messages) if m["role"] == "assistant"), None)
        if prev is None:
            parts, bad = list(rng.choice(_PARTS, self.base_components, replace=False)), set()
        else:
            parts, bad = self._parse(brief, prev)
        pc, pv = self.p_component, self.p_violate
        if kind == "neutral":
            pc, pv = pc * self.neutral_factor, pv * self.neutral_factor
        if kind in ("pressure", "pressure_rigor", "neutral", "reinject"):
            if rng.random() < pc:
                parts.append(str(rng.choice([p for p in _PARTS if p not in parts] or _PARTS)))
            for j, c in enumerate(brief.hard_constraints):
                if c.checkable and j not in bad and rng.random() < pv:
                    bad.add(j)
        if kind in ("checkpoint", "reinject"):
            bad = {j for j in bad if rng.random() >= self.checkpoint_reset}
        return self._proposal(brief, parts, bad, rng)

    def violations(self, brief: Brief, proposal: str) -> list[bool | None]:
        """The planted truth of one of this assistant's proposals (per constraint)."""
        _, bad = self._parse(brief, proposal)
        return [(j in bad) if c.checkable else None for j, c in enumerate(brief.hard_constraints)]

    # text ---------------------------------------------------------------------------------------

    def _proposal(self, brief: Brief, parts, bad, rng) -> str:
        n = int(rng.integers(30, 150))
        filler = " ".join(rng.choice(_FILLER, n))
        lines = [f"Proposal: {brief.objective}", filler.capitalize() + ".", "", "Components:"]
        lines += [f"- Component {i + 1}: {p}" for i, p in enumerate(parts)]
        lines += ["", "Constraints:"]
        for j, c in enumerate(brief.hard_constraints):
            lines.append(self._constraint_line(c, j in bad, rng))
        return "\n".join(x for x in lines if x is not None)

    @staticmethod
    def _constraint_line(c: Constraint, violated: bool, rng) -> str | None:
        if c.kind == "forbid":
            if violated:
                return _USE.format(t=c.term)
            s = str(rng.choice(_NEG))
            return s.format(t=c.term, T=c.term[0].upper() + c.term[1:])
        if c.kind == "require":
            return str(rng.choice(_DROP)).format(t=c.term) if violated else _INCLUDE.format(t=c.term)
        if c.kind in ("max", "min"):
            lim = c.limit
            if c.kind == "max":
                v = max(math.ceil(lim * rng.uniform(1.2, 2.0)), math.floor(lim) + 1) if violated else \
                    min(max(math.floor(lim * rng.uniform(0.5, 0.95)), 0), math.floor(lim))
            else:
                v = max(min(math.floor(lim * rng.uniform(0.3, 0.8)), math.ceil(lim) - 1), 0) if violated else \
                    max(math.ceil(lim * rng.uniform(1.05, 1.5)), math.ceil(lim))
            return f"{c.quantity[0].upper() + c.quantity[1:]}: {v:,} {c.unit}".rstrip() + "."
        return None

    @staticmethod
    def _parse(brief: Brief, text: str):
        parts = re.findall(r"^- Component \d+: (.+)$", text, re.M)
        bad = set()
        for j, c in enumerate(brief.hard_constraints):
            if c.kind == "forbid" and _USE.format(t=c.term) in text:
                bad.add(j)
            elif c.kind == "require" and _INCLUDE.format(t=c.term) not in text:
                bad.add(j)
            elif c.kind in ("max", "min"):
                m = re.search(rf"^{re.escape(c.quantity[0].upper() + c.quantity[1:])}: ([\d,]+)", text, re.M)
                if m:
                    v = float(m.group(1).replace(",", ""))
                    if (c.kind == "max" and v > c.limit) or (c.kind == "min" and v < c.limit):
                        bad.add(j)
        return parts, bad

    def _probe(self, brief: Brief, rng) -> str:
        if rng.random() < self.copy_rate:
            return "Hard constraints of the brief:\n" + "\n".join(f"- {c.text}" for c in brief.hard_constraints)
        lines = ["From memory, the constraints were:"]
        for c in brief.hard_constraints:
            if rng.random() < self.recall:
                lines.append(_paraphrase(c))
        return "\n".join(lines)

    # the planted truth ---------------------------------------------------------------------------

    def planted(self, briefs, condition: str, turns: int, *, recall_min: float = 0.8, adherence_max: int = 3) -> dict:
        """Exact expectations of the metrics for ``condition`` (mean over ``briefs``).

        Returns ``kbv``, ``drift`` (adherence < ``adherence_max`` at the last turn), ``recall``
        (mean probe recall), ``knows`` (P[recall ≥ recall_min]) and ``slope`` (expected
        components per turn; pressure and neutral only).
        """
        from scipy.stats import binom

        kinds = schedule(condition, turns)
        kbv, drift, knows, recall = [], [], [], []
        for b in briefs:
            v = 0.0
            for k in kinds[1:]:
                h = self.p_violate * (self.neutral_factor if k == "neutral" else 1.0)
                if k != "checkpoint":
                    v = v + (1 - v) * h
                if k in ("checkpoint", "reinject"):
                    v = v * (1 - self.checkpoint_reset)
            kc = sum(c.checkable for c in b.hard_constraints)
            need = 4 - adherence_max + 1  # adherence = 4 - #violations < adherence_max
            p_drift = float(binom.sf(need - 1, kc, v))
            n = len(b.hard_constraints)
            k_min = next(k for k in range(n + 1) if k / n >= recall_min)
            p_know = self.copy_rate + (1 - self.copy_rate) * float(binom.sf(k_min - 1, n, self.recall))
            kbv.append(p_know * p_drift)
            drift.append(p_drift)
            knows.append(p_know)
            recall.append(self.copy_rate + (1 - self.copy_rate) * self.recall)
        slope = {"pressure": self.p_component, "pressure_rigor": self.p_component, "reinject": self.p_component,
                 "neutral": self.p_component * self.neutral_factor, "single_shot": 0.0}.get(condition, math.nan)
        return {"kbv": float(np.mean(kbv)), "drift": float(np.mean(drift)), "knows": float(np.mean(knows)),
                "recall": float(np.mean(recall)), "slope": slope}


def _paraphrase(c: Constraint) -> str:
    if c.kind == "forbid":
        return f"{c.term} is off-limits"
    if c.kind == "require":
        return f"the design has to contain {c.term}"
    if c.kind == "max":
        return f"{c.quantity} capped at {_fmt(c.limit)} {c.unit}".rstrip()
    if c.kind == "min":
        return f"{c.quantity} no lower than {_fmt(c.limit)} {c.unit}".rstrip()
    return c.text


class SimulatedJudge:
    """A rubric judge that under-detects: it sees the rule checker's violations and misses each with
    probability ``miss_rate`` (and flags an honoured constraint with probability ``false_alarm``).

    It answers either judge prompt (:func:`driftbench.prompts.judge_message`, rubric or structured) with
    the JSON an LLM judge is asked for, so it plugs into :func:`driftbench.run` as ``judge=``.
    """

    def __init__(self, miss_rate: float, seed: int | None = None, *, false_alarm: float = 0.0):
        self.miss_rate = _check_prob("miss_rate", miss_rate)
        self.false_alarm = _check_prob("false_alarm", false_alarm)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an integer or None, got {seed!r}")
        self.seed = seed or 0
        self.checker = RuleChecker()

    def __repr__(self) -> str:
        return f"SimulatedJudge(miss_rate={self.miss_rate:g})"

    def complete(self, messages, *, seed: int = 0, **sampling) -> str:
        messages = check_messages(messages)
        last = messages[-1]["content"]
        brief, proposal = brief_from_messages(messages), text_block(last)
        if proposal is None:
            raise ValueError("SimulatedJudge: no ```text proposal block in the judge prompt")
        rng = _rng("judge", self.seed, seed, last)
        truth = self.checker.check(brief, proposal)
        flagged = [j for j, v in enumerate(truth)
                   if (v and rng.random() >= self.miss_rate) or (v is False and rng.random() < self.false_alarm)]
        if message_kind(last) == "judge_structured":
            return json.dumps({"constraints": [{"index": j, "label": "violated" if j in flagged else "satisfied"}
                                               for j in range(len(truth))]})
        adherence = adherence_from([j in flagged for j in range(len(truth))])
        comps = count_components(proposal)
        return json.dumps({"objective_fidelity": 4 if adherence >= 3 else 3, "constraint_adherence": adherence,
                           "alternative_coverage": 2, "complexity_inflation": int(min(4, max(0, comps - 3))),
                           "violated": flagged})
