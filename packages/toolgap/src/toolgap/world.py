"""The toy tool world: arithmetic and a partly memorised knowledge base, questions, and a JSONL loader.

:class:`ToolWorld` writes chat transcripts for tiny GPTs trained from scratch:

- **arithmetic**: ``a op b`` with 1-5 digit operands and ``op`` in ``+ - *``, numbers written digit
  by digit (``3 4 5 + 1 2``);
- **knowledge base**: facts ``(entity, relation) -> value``; a relation-dependent share of the facts is
  *memorisable* (shown with its answer in training), the rest only ever appears behind a ``kb`` call.

With tools offered, the training target is either the direct answer or ``<call> calc ( 3 4 5 + 1 2 )
</call>`` / ``<call> kb ( ent7 , color ) </call>`` followed by the tool's result (``= 3 5 7``, masked
out of the loss: the tool writes it). Whether a target calls a tool is decided by a **model-agnostic
annotator rule** (arithmetic: an operand of 3+ digits (``call_digits``), or a multiplication with a 2+ digit operand;
facts: the relations ``animal`` and ``year``), as in prior work: that is what makes the toy's
mismatch largely an artefact of its annotator, a demonstration of the measurement only.
Without tools the target is always the direct answer.

:func:`load_questions` reads users' JSONL questions (``{"question", "answer"[, "id", "domain",
"annotator"]}``), skipping and counting bad rows.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paperworks import check_int

log = logging.getLogger(__name__)

OPS = ("+", "-", "*")
RELATIONS = {  # relation -> (values, share of its facts that is memorisable)
    "color": (("red", "blue", "green", "black", "white", "pink", "gray", "gold"), 0.8),
    "city": (("paris", "rome", "oslo", "lima", "cairo", "tokyo", "delhi", "quito", "seoul", "accra"), 0.7),
    "animal": (("cat", "dog", "owl", "fox", "bee", "eel", "yak", "ant", "bat", "cow"), 0.4),
    "year": (("y1900", "y1920", "y1940", "y1960", "y1980", "y2000", "y2020", "y1850", "y1870"), 0.3),
}
ANNOTATOR_KB_CALLS = ("animal", "year")  # the annotator's "obscure" relations
CALL, END_CALL = "<call>", "</call>"
#: the two tools of the toy in JSON-schema form (what ``apply_chat_template(tools=...)`` takes)
TOOLS = [
    {"type": "function", "function": {
        "name": "calc", "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                       "required": ["expression"]}}},
    {"type": "function", "function": {
        "name": "kb", "description": "Look up the value of a relation of an entity.",
        "parameters": {"type": "object", "properties": {"entity": {"type": "string"},
                                                        "relation": {"type": "string"}},
                       "required": ["entity", "relation"]}}},
]


@dataclass(frozen=True)
class Question:
    """One question: ``question`` is the user's message, ``answer`` the reference answer.

    ``annotator`` is the model-agnostic label (True: the annotator says a tool is needed), or ``None``.
    ``group`` keys the cross-validation folds (the same question never lands in two folds).
    """

    id: str
    question: str
    answer: str
    domain: str = "custom"
    annotator: bool | None = None
    tool_input: str = ""

    @property
    def group(self) -> str:
        return f"{self.domain}:{self.question}"


class Questions(list):
    """A list of :class:`Question` with the loader's tallies (``skipped``, ``bad_lines``)."""

    skipped: int = 0
    bad_lines: list[int]

    def __init__(self, items=(), *, skipped: int = 0, bad_lines=()):
        super().__init__(items)
        self.skipped, self.bad_lines = skipped, list(bad_lines)


def spaced(n: int) -> str:
    """``345 -> "3 4 5"``, ``-12 -> "- 1 2"`` (one token per digit)."""
    s = str(int(n))
    return " ".join(s)


def vocabulary(n_entities: int) -> list[str]:
    """Every word the toy writes (for :func:`paperworks.lm.tiny.word_tokenizer`)."""
    words = [str(d) for d in range(10)] + ["tools", "calc", "kb", "of", CALL, END_CALL]
    for rel, (vals, _) in RELATIONS.items():
        words += [rel, *vals]
    return words + [f"ent{i}" for i in range(n_entities)]


class ToolWorld:
    """Arithmetic and knowledge-base questions with a model-agnostic annotator.

    Args:
        seed: fixes the knowledge base (values and which facts are memorisable); ``None`` -> 0.
        n_entities: entities in the knowledge base (4 relations each).
        max_digits: operand digits are drawn from 1..max_digits, short operands more often
            (``digit_weights``, renormalised over 1..max_digits) so that a tiny model can solve some.
        ops: the arithmetic operators used.
        call_digits: the annotator calls ``calc`` when an operand has this many digits (or for a
            multiplication with a 2+ digit operand).

    Example::

        world = ToolWorld(seed=0)
        qs = world.questions("arithmetic", 5, seed=1)
        text, n_prompt, result = world.transcript(qs[0], tools=True)
    """

    def __init__(self, seed: int | None = None, *, n_entities: int = 60, max_digits: int = 5,
                 ops: tuple[str, ...] = OPS, digit_weights: tuple[float, ...] = (0.6, 0.2, 0.1, 0.05, 0.05, 0.05, 0.05,
                                                                                0.05, 0.05), call_digits: int = 3):
        seed = 0 if seed is None else check_int(seed, "seed", minimum=0)
        self.seed = seed
        self.n_entities = check_int(n_entities, "n_entities", minimum=1)
        self.max_digits = check_int(max_digits, "max_digits", minimum=1, maximum=9)
        ops = tuple(ops)
        if not ops or any(o not in OPS for o in ops):
            raise ValueError(f"ops must be a non-empty subset of {OPS}, got {ops!r}")
        self.ops = ops
        self.call_digits = check_int(call_digits, "call_digits", minimum=1)
        w = np.asarray(digit_weights[:self.max_digits], dtype=float)
        if len(w) < self.max_digits or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"digit_weights must give {self.max_digits} non-negative weights, got {digit_weights!r}")
        self.digit_p = w / w.sum()
        g = np.random.default_rng(10_000 + seed)
        self.facts: dict[tuple[str, str], str] = {}
        self.memorisable: set[tuple[str, str]] = set()
        for i in range(self.n_entities):
            for rel, (vals, share) in RELATIONS.items():
                key = (f"ent{i}", rel)
                self.facts[key] = vals[int(g.integers(len(vals)))]
                if g.random() < share:
                    self.memorisable.add(key)
        self._mem = sorted(self.memorisable)
        self._all = sorted(self.facts)

    def words(self) -> list[str]:
        return vocabulary(self.n_entities)

    # questions -----------------------------------------------------------------------------------

    def _arith(self, g) -> Question:
        da, db = (int(g.choice(self.max_digits, p=self.digit_p)) + 1 for _ in range(2))
        a = int(g.integers(10 ** (da - 1) if da > 1 else 0, 10 ** da))
        b = int(g.integers(10 ** (db - 1) if db > 1 else 0, 10 ** db))
        op = self.ops[int(g.integers(len(self.ops)))]
        if op == "-" and a < b:
            a, b, da, db = b, a, db, da
        val = a + b if op == "+" else a - b if op == "-" else a * b
        expr = f"{spaced(a)} {op} {spaced(b)}"
        call = max(da, db) >= self.call_digits or (op == "*" and max(da, db) >= 2)
        return Question(f"ar:{a}{op}{b}", expr, spaced(val), "arithmetic", call, expr)

    def _kb(self, key) -> Question:
        ent, rel = key
        return Question(f"kb:{ent}:{rel}", f"{rel} of {ent} ?", self.facts[key], "kb",
                        rel in ANNOTATOR_KB_CALLS, f"{ent} , {rel}")

    def questions(self, domain: str, n: int, *, seed: int = 0) -> list[Question]:
        """``n`` test questions of ``domain`` (``"arithmetic"`` or ``"kb"``); kb questions go through the
        facts in an order fixed by ``seed``, each once before any repeats (repeats share a fold group)."""
        n = check_int(n, "n", minimum=1)
        g = np.random.default_rng(seed)
        if domain == "arithmetic":
            return [self._arith(g) for _ in range(n)]
        if domain == "kb":
            idx = np.concatenate([g.permutation(len(self._all)) for _ in range(-(-n // len(self._all)))])[:n]
            return [self._kb(self._all[i]) for i in idx]
        raise ValueError(f"domain must be 'arithmetic' or 'kb', got {domain!r}")

    def tool_result(self, q: Question) -> str:
        return q.answer

    # training transcripts --------------------------------------------------------------------------

    def target(self, q: Question, *, tools: bool) -> tuple[str, str]:
        """``(generated, result)``: what the assistant writes and the tool result after it ("" if none)."""
        if tools and q.annotator:
            name = "calc" if q.domain == "arithmetic" else "kb"
            return f"{CALL} {name} ( {q.tool_input} ) {END_CALL}", f"= {q.answer}"
        return q.answer, ""

    def training_question(self, g, domain: str, *, tools: bool) -> Question:
        """A training question: any arithmetic; a fact whose answer the transcript shows must be
        memorisable (non-memorisable facts are only seen behind a ``kb`` call)."""
        if domain == "arithmetic":
            return self._arith(g)
        pool = self._all if tools else self._mem
        for _ in range(100):
            key = pool[int(g.integers(len(pool)))]
            if key in self.memorisable or (tools and key[1] in ANNOTATOR_KB_CALLS):
                return self._kb(key)
        return self._kb(self._mem[int(g.integers(len(self._mem)))])


def load_questions(path, *, domain: str | None = None) -> Questions:
    """Read questions from a JSONL file: one object per line with ``question`` and ``answer``
    (string or number), optionally ``id``, ``domain`` and ``annotator`` (bool).

    Bad rows (not JSON, missing or mistyped fields) are skipped and counted: ``Questions.skipped`` and
    ``Questions.bad_lines`` (1-based line numbers). Blank lines are ignored.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path: {path} does not exist")
    out, bad = [], []
    for ln, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not an object")
            q, a = row["question"], row["answer"]
            if not isinstance(q, str) or not q.strip():
                raise ValueError("question")
            if isinstance(a, bool) or not isinstance(a, (str, int, float)) or (isinstance(a, str) and not a.strip()):
                raise ValueError("answer")
            ann = row.get("annotator")
            if ann is not None and not isinstance(ann, bool):
                raise ValueError("annotator")
            dom = row.get("domain", domain or "custom")
            if not isinstance(dom, str) or not dom:
                raise ValueError("domain")
            out.append(Question(str(row.get("id", f"line{ln}")), q.strip(), str(a).strip(), dom, ann))
        except (ValueError, KeyError, TypeError):
            bad.append(ln)
    if bad:
        log.warning("%s: skipped %d bad rows (lines %s)", path, len(bad), bad[:10])
    if not out:
        raise ValueError(f"data.path: {path} has no valid question rows ({len(bad)} bad)")
    return Questions(out, skipped=len(bad), bad_lines=bad)
