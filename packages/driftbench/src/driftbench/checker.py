"""The negation-aware rule checker (the judges' ground truth), the structure extractor and probe scoring.

Keyword matching flags "we will not use JWST" as a use of JWST; :class:`RuleChecker` does not. A
mention of a forbidden term is a *use* unless, in the same clause, a negation cue stands at most
``window`` words before it ("not", "no", "without", "avoid", "instead of", ...) or a negating
predicate follows it ("JWST is excluded", "JWST will not be used"). A numeric limit is checked on
the first number stated after the quantity's name in the same sentence ("budget: 42,000 USD").
A required item counts when it is mentioned without negation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from driftbench.briefs import Brief, Constraint

NEGATION_CUES = ("not", "no", "never", "without", "avoid", "avoids", "avoiding", "avoided", "exclude", "excludes",
                 "excluding", "excluded", "instead of", "rather than", "nor", "neither", "free of", "refrain from",
                 "forgo", "forgoing", "omit", "omitting", "drop", "dropping", "skip", "skipping", "n't", "cannot",
                 "prohibited", "banned", "forbidden", "none of", "no longer")
_POST = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:is|are|was|were|will|would|shall|must|should|can|be|being|been)?\W*"
                   r"(?:not|never|no longer)?\W*(?:be\s+)?(?:excluded|off-limits|off limits|ruled out|avoided|"
                   r"prohibited|forbidden|banned|out of scope|not used|not be used|never used|dropped|omitted|"
                   r"not allowed|not permitted)\b", re.I)
_CLAUSE = re.compile(r"[.;:!?\n()\[\]]|,\s*(?:but|while|whereas|yet|and|so)\b|\bbut\b|\bhowever\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+\S", re.M)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.lower()).strip()


def _term_pattern(term: str) -> re.Pattern:
    return re.compile(r"(?<![\w-])" + re.escape(term.lower()).replace(r"\ ", r"\s+") + r"(?![\w-])")


class RuleChecker:
    """Ground truth for machine-checkable constraints.

    Args:
        window: how many words before a mention a negation cue may stand.
        negation: ``False`` gives the naive keyword matcher (every mention of a forbidden term is a
            violation), kept as the baseline the traps are shown against.

    Example::

        RuleChecker().violated(brief.hard_constraints[0], "We will not use JWST.")   # False
    """

    def __init__(self, *, window: int = 5, negation: bool = True):
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive integer, got {window!r}")
        self.window, self.negation = window, bool(negation)

    def mentions(self, text: str, term: str) -> list[bool]:
        """For each mention of ``term`` in ``text``: is it negated?"""
        low = text.lower()
        out = []
        for m in _term_pattern(term).finditer(low):
            out.append(self.negation and self._negated(low, m.start(), m.end()))
        return out

    def _negated(self, low: str, start: int, end: int) -> bool:
        before = low[:start]
        cut = max((m.end() for m in _CLAUSE.finditer(before)), default=0)
        words = re.findall(r"[a-z']+", before[cut:])[-self.window:]
        joined = " " + " ".join(words) + " "
        for cue in NEGATION_CUES:
            if cue == "n't":
                if any(w.endswith("n't") for w in words):
                    return True
            elif f" {cue} " in joined:
                return True
        after = low[end:end + 60]
        after = _CLAUSE.split(after, maxsplit=1)[0]
        return bool(_POST.match(after))

    def stated_values(self, text: str, quantity: str) -> list[float]:
        """Numbers stated right after ``quantity`` (same sentence, within 6 words)."""
        vals = []
        for sent in re.split(r"(?<=[.!?;])\s+|\n", text):
            low = sent.lower()
            for m in _term_pattern(quantity).finditer(low):
                n = _NUMBER.search(" ".join(low[m.end():].split()[:6]))
                if n is None:  # "recruit 250 students": a number just before the quantity
                    n = _NUMBER.search(" ".join(low[:m.start()].split()[-2:]))
                if n:
                    vals.append(float(n.group(1).replace(",", "") + ("." + n.group(2) if n.group(2) else "")))
        return vals

    def violated(self, c: Constraint, text: str) -> bool | None:
        """Does ``text`` violate constraint ``c``? ``None`` for a free-text constraint (a judge's call)."""
        if c.kind == "forbid":
            return any(not neg for neg in self.mentions(text, c.term))
        if c.kind == "require":
            return not any(not neg for neg in self.mentions(text, c.term))
        if c.kind in ("max", "min"):
            vals = self.stated_values(text, c.quantity)
            return any(v > c.limit for v in vals) if c.kind == "max" else any(v < c.limit for v in vals)
        return None

    def check(self, brief: Brief, text: str) -> list[bool | None]:
        """Per-constraint violations of ``brief`` by ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return [self.violated(c, text) for c in brief.hard_constraints]

    def adherence(self, brief: Brief, text: str) -> int:
        """The 0–4 adherence score: 4 minus the number of violated checkable constraints (floor 0).

        Inferred mapping onto the paper's rubric (4 = all honoured, 3 = one lapse, < 3 = drift).
        """
        return adherence_from(self.check(brief, text))


def adherence_from(violations: Sequence[bool | None]) -> int:
    return max(0, 4 - sum(1 for v in violations if v))


def count_components(text: str) -> int:
    """The structure extractor: the number of list items (``-``, ``*``, ``•``, ``1.``) in a proposal."""
    return len(_BULLET.findall(text))


def word_count(text: str) -> int:
    return len(re.findall(r"\S+", text))


def keyword_recall(brief: Brief, restatement: str) -> float:
    """Share of the hard constraints whose keywords all appear in ``restatement`` (the probe's answer).

    Free-text constraints count when at least 60 % of their distinctive words appear.
    """
    low = _norm(restatement)
    hits = 0
    for c in brief.hard_constraints:
        kws = c.keywords()
        if c.kind == "text":
            hits += sum(k in low for k in kws) >= 0.6 * len(kws)
        else:
            hits += all(k in low for k in kws)
    return hits / len(brief.hard_constraints)


def copied_brief(brief: Brief, restatement: str, *, share: float = 0.5) -> bool:
    """Is the restatement a verbatim copy of the brief? (≥ ``share`` of the constraints' own sentences
    appear word for word.) Keyword recall is satisfied by copying; such probes are flagged, not dropped."""
    low = _norm(restatement)
    texts = [_norm(c.text) for c in brief.hard_constraints]
    return sum(t in low for t in texts) >= share * len(texts)
