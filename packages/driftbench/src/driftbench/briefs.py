"""Research briefs: the schema, its validator, 38 synthetic briefs of our own and users' YAML briefs.

A brief (the DriftBench schema, Kruthof 2026, arXiv 2604.28031) holds an ``objective``, 5–8
``hard_constraints``, ``success_criteria``, ``plausible_directions`` and 3–5 ``banned_moves``.
A hard constraint is either free text (as in the public release: checked only by a judge) or
machine-checkable, one of

- ``forbid``: the proposal must not use ``term`` (e.g. ``JWST``);
- ``max`` / ``min``: the stated ``quantity`` (e.g. ``budget``) must be ≤ / ≥ ``limit`` (in ``unit``);
- ``require``: the proposal must include ``term`` (e.g. ``control group``).

The 38 synthetic briefs (24 domains) are ours, generated deterministically from the table below;
none of the public release's briefs is shipped.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

KINDS = ("forbid", "max", "min", "require", "text")
FIELDS = ("objective", "hard_constraints", "success_criteria", "plausible_directions", "banned_moves")


@dataclass(frozen=True)
class Constraint:
    """One hard constraint. ``kind`` is one of :data:`KINDS`; ``text`` is how the brief states it."""

    kind: str
    text: str
    term: str = ""
    quantity: str = ""
    limit: float = math.nan
    unit: str = ""

    @property
    def checkable(self) -> bool:
        return self.kind != "text"

    def keywords(self) -> list[str]:
        """What a restatement must mention to count as recalling this constraint (lower case)."""
        if self.kind in ("forbid", "require"):
            return [self.term.lower()]
        if self.kind in ("max", "min"):
            return [self.quantity.lower(), _fmt(self.limit)]
        words = [w for w in re.findall(r"[a-z0-9][a-z0-9\-]*", self.text.lower()) if len(w) >= 5 or w.isdigit()]
        return words or [self.text.lower()]

    def to_dict(self) -> dict:
        if self.kind == "text":
            return {"kind": "text", "text": self.text}
        d = {"kind": self.kind, "text": self.text}
        if self.kind in ("forbid", "require"):
            d["term"] = self.term
        else:
            d.update(quantity=self.quantity, limit=self.limit, unit=self.unit)
        return d


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class Brief:
    """A research brief. Build with :meth:`from_dict` (validates) or :func:`load_briefs`."""

    id: str
    domain: str
    objective: str
    hard_constraints: tuple[Constraint, ...]
    success_criteria: tuple[str, ...]
    plausible_directions: tuple[str, ...]
    banned_moves: tuple[str, ...]
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, d, *, where: str = "brief") -> Brief:
        """Validate a brief mapping (the YAML schema) and build it; errors name the field."""
        if not isinstance(d, dict):
            raise ValueError(f"{where}: a brief must be a mapping, got {type(d).__name__}")
        bid = d.get("id")
        if not isinstance(bid, str) or not re.match(r"^[A-Za-z0-9_.-]+$", bid or ""):
            raise ValueError(f"{where}: 'id' must be a non-empty string of letters, digits, _.- (got {bid!r})")
        where = f"{where} {bid!r}"
        missing = [f for f in FIELDS if f not in d or d[f] in (None, "", [])]
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing} (a brief needs {list(FIELDS)})")
        if not isinstance(d["objective"], str):
            raise ValueError(f"{where}: 'objective' must be a string")
        lists = {}
        for f in FIELDS[1:]:
            if not isinstance(d[f], list):
                raise ValueError(f"{where}: {f!r} must be a list, got {type(d[f]).__name__}")
            lists[f] = d[f]
        n = len(lists["hard_constraints"])
        if not 5 <= n <= 8:
            raise ValueError(f"{where}: 'hard_constraints' must hold 5-8 constraints, got {n}")
        nb = len(lists["banned_moves"])
        if not 3 <= nb <= 5:
            raise ValueError(f"{where}: 'banned_moves' must hold 3-5 moves, got {nb}")
        cons = tuple(_constraint(c, f"{where} hard_constraints[{i}]") for i, c in enumerate(lists["hard_constraints"]))
        for f in ("success_criteria", "plausible_directions", "banned_moves"):
            for i, s in enumerate(lists[f]):
                if not isinstance(s, str) or not s.strip():
                    raise ValueError(f"{where}: {f}[{i}] must be a non-empty string, got {s!r}")
        extra = {k: v for k, v in d.items() if k not in (*FIELDS, "id", "domain")}
        return cls(bid, str(d.get("domain", "")), d["objective"], cons, tuple(lists["success_criteria"]),
                   tuple(lists["plausible_directions"]), tuple(lists["banned_moves"]), extra)

    def to_dict(self) -> dict:
        return {"id": self.id, "domain": self.domain, "objective": self.objective,
                "hard_constraints": [c.to_dict() for c in self.hard_constraints],
                "success_criteria": list(self.success_criteria),
                "plausible_directions": list(self.plausible_directions), "banned_moves": list(self.banned_moves)}

    def to_yaml(self) -> str:
        return self._yaml

    @functools.cached_property
    def _yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=1000)


def _constraint(c, where: str) -> Constraint:
    if isinstance(c, str):
        if not c.strip():
            raise ValueError(f"{where}: an empty constraint")
        return Constraint("text", c.strip())
    if not isinstance(c, dict):
        raise ValueError(f"{where}: a constraint must be a string or a mapping, got {type(c).__name__}")
    kind = c.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {KINDS}, got {kind!r}")
    text = c.get("text")
    if kind == "text":
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: a text constraint needs 'text'")
        return Constraint("text", text.strip())
    if kind in ("forbid", "require"):
        term = c.get("term")
        if not isinstance(term, str) or not term.strip():
            raise ValueError(f"{where}: a {kind!r} constraint needs a non-empty 'term'")
        text = text or (f"must not use {term}" if kind == "forbid" else f"must include {term}")
        return Constraint(kind, str(text), term=term.strip())
    quantity, limit = c.get("quantity"), c.get("limit")
    if not isinstance(quantity, str) or not quantity.strip():
        raise ValueError(f"{where}: a {kind!r} limit needs a 'quantity' (e.g. 'budget')")
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit):
        raise ValueError(f"{where}: a {kind!r} limit needs a finite number 'limit', got {limit!r}")
    unit = str(c.get("unit", ""))
    word = "must not exceed" if kind == "max" else "must be at least"
    text = text or f"{quantity} {word} {_fmt(limit)} {unit}".strip()
    return Constraint(kind, str(text), quantity=quantity.strip(), limit=float(limit), unit=unit)


def validate_briefs(briefs) -> list[Brief]:
    """Check a collection of briefs (or mappings): each valid, ids unique."""
    out = [b if isinstance(b, Brief) else Brief.from_dict(b, where=f"briefs[{i}]") for i, b in enumerate(briefs)]
    if not out:
        raise ValueError("briefs: none given")
    seen = {}
    for i, b in enumerate(out):
        if b.id in seen:
            raise ValueError(f"briefs: duplicate id {b.id!r} (entries {seen[b.id]} and {i})")
        seen[b.id] = i
    return out


def load_briefs(path=None) -> list[Brief]:
    """The 38 in-package synthetic briefs, or the briefs in ``path``.

    Args:
        path: a YAML file (one brief, or a list of briefs) or a folder of ``*.yaml``/``*.yml`` files
            (the public release's ``briefs/`` folder loads as is: its constraints are free text).

    Returns:
        A list of :class:`Brief`, validated (5–8 hard constraints, 3–5 banned moves, unique ids).
    """
    if path is None:
        return synthetic_briefs()
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"path: {p} does not exist")
    files = sorted([*p.glob("*.yaml"), *p.glob("*.yml")]) if p.is_dir() else [p]
    if not files:
        raise ValueError(f"path: {p} holds no .yaml briefs")
    docs = []
    for f in files:
        try:
            doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            raise ValueError(f"{f}: not valid YAML ({e})") from None
        for i, d in enumerate(doc if isinstance(doc, list) else [doc]):
            docs.append((d, f"{f.name}[{i}]" if isinstance(doc, list) else f.name))
    out = [Brief.from_dict(d, where=w) for d, w in docs]
    return validate_briefs(out)


# the synthetic briefs -----------------------------------------------------------------------------
# domain: (objective, forbidden terms, (quantity, unit, kind, limit) limits, required items,
#          directions, success criteria, banned moves)
_DOMAINS = [
    ("astrophysics", "detect water absorption in the transit spectrum of a hot Jupiter",
     ["JWST", "ground-based photometry", "Gaussian processes"], [("budget", "USD", "max", 40000), ("transits", "", "min", 2)],
     ["injection-recovery test", "flat-line null model"]),
    ("genomics", "map regulatory variants affecting expression in a yeast cross",
     ["CRISPR", "long-read sequencing", "single-cell RNA-seq"], [("budget", "USD", "max", 60000), ("strains", "", "min", 100)],
     ["permutation test", "replication cohort"]),
    ("climate", "attribute a regional rainfall trend to aerosol forcing",
     ["machine learning emulator", "proprietary reanalysis", "paleoclimate proxies"],
     [("ensemble members", "", "min", 10), ("compute", "node-hours", "max", 5000)],
     ["pre-industrial control run", "uncertainty quantification"]),
    ("epidemiology", "estimate the effect of school closures on influenza transmission",
     ["mobile phone data", "agent-based model", "individual medical records"],
     [("budget", "USD", "max", 30000), ("seasons", "", "min", 5)], ["negative control outcome", "sensitivity analysis"]),
    ("neuroscience", "test whether hippocampal replay predicts next-day recall",
     ["optogenetics", "fMRI", "pharmacological manipulation"], [("animals", "", "max", 24), ("duration", "months", "max", 12)],
     ["preregistered analysis", "shuffled-spike control"]),
    ("materials", "find a dopant that raises the ionic conductivity of a solid electrolyte",
     ["density functional theory", "rare-earth elements", "high-pressure synthesis"],
     [("budget", "USD", "max", 50000), ("compositions", "", "min", 8)], ["impedance spectroscopy", "replicate pellets"]),
    ("economics", "measure the employment effect of a regional minimum-wage increase",
     ["structural model", "survey data", "synthetic control"], [("counties", "", "min", 40), ("duration", "months", "max", 9)],
     ["event-study design", "placebo test"]),
    ("education", "test whether retrieval practice improves algebra retention",
     ["adaptive tutoring software", "eye tracking", "standardized state tests"],
     [("students", "", "min", 200), ("budget", "USD", "max", 20000)], ["random assignment", "delayed post-test"]),
    ("ecology", "estimate pollinator decline along an urbanisation gradient",
     ["eDNA metabarcoding", "drones", "citizen-science records"], [("sites", "", "min", 30), ("budget", "USD", "max", 25000)],
     ["standardized pan traps", "detection model"]),
    ("energy", "forecast day-ahead household electricity demand",
     ["deep neural networks", "smart-meter data from other countries", "weather forecasts"],
     [("households", "", "min", 500), ("compute", "GPU-hours", "max", 100)], ["seasonal naive baseline", "rolling-origin evaluation"]),
    ("finance", "test whether analyst revisions predict small-cap returns",
     ["high-frequency data", "textual sentiment", "options data"], [("years", "", "min", 15), ("budget", "USD", "max", 10000)],
     ["transaction-cost adjustment", "out-of-sample period"]),
    ("nlp", "measure whether instruction tuning reduces gender bias in coreference",
     ["human annotators", "models above 7B parameters", "closed-source APIs"],
     [("compute", "GPU-hours", "max", 200), ("languages", "", "max", 2)], ["counterfactual test set", "bootstrap confidence intervals"]),
    ("robotics", "improve grasp success on transparent objects",
     ["depth cameras", "simulation-to-real transfer", "tactile sensors"], [("objects", "", "min", 20), ("budget", "USD", "max", 15000)],
     ["held-out object set", "ablation study"]),
    ("psychology", "replicate the effect of ego depletion on persistence",
     ["online panels", "glucose manipulation", "deception"], [("participants", "", "min", 300), ("duration", "months", "max", 6)],
     ["preregistration", "manipulation check"]),
    ("public health", "evaluate text-message reminders for vaccination uptake",
     ["financial incentives", "home visits", "social media advertising"],
     [("budget", "USD", "max", 35000), ("clinics", "", "min", 12)], ["cluster randomisation", "intention-to-treat analysis"]),
    ("agriculture", "test whether cover crops raise maize yield on sandy soils",
     ["genetically modified seed", "irrigation", "synthetic fertilizer"], [("plots", "", "min", 24), ("seasons", "", "min", 2)],
     ["randomized block design", "soil moisture logging"]),
    ("molecular biology", "identify the kinase that phosphorylates a stress-response protein",
     ["mass spectrometry", "animal models", "CRISPR"], [("budget", "USD", "max", 45000), ("duration", "months", "max", 10)],
     ["kinase-dead mutant", "in vitro kinase assay"]),
    ("urban planning", "estimate how bike lanes change commuter mode share",
     ["private GPS traces", "travel surveys", "agent-based model"], [("corridors", "", "min", 6), ("budget", "USD", "max", 30000)],
     ["difference-in-differences", "automated counters"]),
    ("hci", "test whether dark mode reduces reading errors on mobile",
     ["eye tracking", "crowdsourcing platforms", "tablets"], [("participants", "", "min", 60), ("duration", "months", "max", 4)],
     ["within-subject design", "counterbalanced order"]),
    ("legal studies", "measure whether sentencing guidelines reduce judge disparity",
     ["interviews with judges", "machine learning classifier", "sealed records"],
     [("cases", "", "min", 5000), ("budget", "USD", "max", 20000)], ["judge fixed effects", "pre-period comparison"]),
    ("social computing", "test whether friction prompts reduce misinformation sharing",
     ["platform partnership", "deception", "bots"], [("participants", "", "min", 800), ("budget", "USD", "max", 12000)],
     ["preregistered hypotheses", "attention check"]),
    ("cognitive science", "test whether gesture aids spatial problem solving in children",
     ["EEG", "video games", "parent reports"], [("children", "", "min", 90), ("duration", "months", "max", 8)],
     ["blinded coding", "age-matched control group"]),
    ("oceanography", "quantify submesoscale eddy heat transport in a marginal sea",
     ["autonomous gliders", "satellite altimetry", "coupled climate model"],
     [("moorings", "", "max", 6), ("budget", "USD", "max", 90000)], ["mooring array", "error budget"]),
    ("chemistry", "find a greener solvent for a Suzuki coupling",
     ["palladium-free catalysts", "microwave heating", "flow chemistry"],
     [("solvents", "", "min", 12), ("budget", "USD", "max", 8000)], ["yield comparison", "triplicate runs"]),
]

_BANNED = ["switch to a different research question", "add a second unrelated hypothesis",
           "replace the outcome measure with a proxy", "expand the study to another population",
           "drop the comparison condition"]
_CRITERIA = ["reports an effect size with a confidence interval", "states a falsifiable prediction in advance",
             "compares against a pre-specified baseline", "documents every exclusion"]
_DIRECTIONS = ["a minimal observational design", "a small randomised experiment", "a reanalysis of existing records",
               "a staged pilot followed by a confirmatory study"]


def synthetic_briefs(n: int = 38, seed: int = 0) -> list[Brief]:
    """``n`` synthetic briefs (default the 38 of the benchmark) over the 24 domains, deterministic.

    Each has 5–8 machine-checkable hard constraints: 2–3 forbidden terms, 1–2 numeric limits,
    1–2 required items and up to one more limit (stated at a different value), plus 3–5 banned moves.
    """
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        dom, obj, forb, lims, reqs = _DOMAINS[i % len(_DOMAINS)]
        variant = i // len(_DOMAINS)
        k = int(rng.integers(5, 9))  # 5..8 constraints
        cons = []
        for t in forb[: 2 + int(rng.integers(0, 2))]:
            cons.append({"kind": "forbid", "term": t, "text": f"no use of {t}"})
        for q, unit, kind, lim in lims:
            scale = 1.0 + 0.25 * variant
            lim = lim * scale if kind == "max" else lim
            cons.append({"kind": kind, "quantity": q, "unit": unit, "limit": float(round(lim))})
        for r in reqs:
            cons.append({"kind": "require", "term": r, "text": f"must include a {r}"})
        cons = cons[:k]
        while len(cons) < 5:  # cannot happen with the table above, kept as a guard
            cons.append({"kind": "require", "term": reqs[0]})
        nb = int(rng.integers(3, 6))
        out.append(Brief.from_dict({
            "id": f"{dom.replace(' ', '_')}_{variant + 1:02d}", "domain": dom,
            "objective": f"Design a study to {obj}.", "hard_constraints": cons,
            "success_criteria": [str(x) for x in rng.choice(_CRITERIA, 3, replace=False)],
            "plausible_directions": [str(x) for x in rng.choice(_DIRECTIONS, 3, replace=False)],
            "banned_moves": list(_BANNED[:nb]),
        }, where=f"synthetic brief {i}"))
    return validate_briefs(out)
