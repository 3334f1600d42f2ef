"""The ratings schema, its loader, the rationale list and problem normalisation.

A ratings file is a CSV (or TSV) with one row per (rater, problem)::

    problem_id,population,rater_id,rating,rationale
    p1,crowd,r07,5,elegant

``rating`` is an integer on the 1-7 interestingness scale; ``rationale`` may be empty. Rows with a
rating off the scale, a non-integer rating or a missing key are skipped and counted (with line
numbers), never coerced.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger("mathinterest")

SCALE = tuple(range(1, 8))
#: the rating strings a rater's next token must be, in scale order
RATING_LABELS = tuple(str(k) for k in SCALE)
PROB_COLUMNS = tuple(f"p{k}" for k in SCALE)
COLUMNS = ("problem_id", "population", "rater_id", "rating", "rationale")
#: Rationales a rater may pick. The paper's list is unpublished: this one is ours (inferred from the
#: abstract's framing of interest and challenge), documented as such.
RATIONALES = ("elegant solution", "surprising result", "challenging", "routine", "connects ideas", "fun to explore")


class RatingsFileError(ValueError):
    """A ratings file that cannot be read at all (missing columns, no valid rows)."""


def load_ratings(path, *, populations: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a ratings CSV into a DataFrame (problem_id, population, rater_id, rating, rationale).

    Rows whose rating is not an integer in 1..7, or that lack a problem, population or rater, are
    skipped; ``df.attrs["skipped"]`` holds their count and ``df.attrs["skipped_lines"]`` their line
    numbers (1 = the header). ``populations``: the allowed population names (others are an error).

    Raises:
        FileNotFoundError, RatingsFileError (missing columns, no valid rows), ValueError (a
        population not in ``populations``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no ratings file at {path}")
    delim = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    rows, skipped = [], []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter=delim)
        missing = [c for c in COLUMNS[:4] if c not in (reader.fieldnames or [])]
        if missing:
            raise RatingsFileError(f"{path}: missing column(s) {missing}; expected {list(COLUMNS)}")
        for line, r in enumerate(reader, start=2):
            key = [(r.get(c) or "").strip() for c in COLUMNS[:3]]
            raw = (r.get("rating") or "").strip()
            if not all(key) or not raw.lstrip("+-").isdigit() or int(raw) not in SCALE:
                skipped.append(line)
                continue
            rows.append((*key, int(raw), (r.get("rationale") or "").strip() or None))
    if skipped:
        log.warning("%s: skipped %d row(s) off the 1-7 scale or incomplete (lines %s%s)", path, len(skipped),
                    ", ".join(map(str, skipped[:10])), " ..." if len(skipped) > 10 else "")
    if not rows:
        raise RatingsFileError(f"{path}: no valid rating rows ({len(skipped)} skipped)")
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    if populations is not None:
        bad = sorted(set(df.population) - set(populations))
        if bad:
            raise ValueError(f"{path}: unknown population(s) {bad}; expected one of {list(populations)}")
    df.attrs["skipped"] = len(skipped)
    df.attrs["skipped_lines"] = skipped
    return df


def check_humans(humans) -> pd.DataFrame:
    """Validate a ratings DataFrame (the :func:`load_ratings` schema)."""
    if not isinstance(humans, pd.DataFrame):
        raise TypeError(f"humans must be a pandas DataFrame (load_ratings), got {type(humans).__name__}")
    missing = [c for c in COLUMNS[:4] if c not in humans.columns]
    if missing:
        raise ValueError(f"humans: missing column(s) {missing}")
    r = pd.to_numeric(humans["rating"], errors="coerce")
    if r.isna().any() or not r.isin(SCALE).all():
        raise ValueError("humans: ratings must be integers 1..7 (load_ratings skips and counts bad rows)")
    return humans


def problems_frame(problems) -> pd.DataFrame:
    """Problems as a DataFrame (problem_id, text, ...).

    Accepts a list of strings (ids ``q0, q1, ...``), a list of dicts with ``problem_id`` and
    ``text``, or a DataFrame with those columns.
    """
    if isinstance(problems, pd.DataFrame):
        df = problems.copy()
    elif isinstance(problems, (str, bytes, Mapping)) or not isinstance(problems, Sequence):
        raise TypeError("problems must be a list of strings, a list of {'problem_id', 'text'} dicts or a DataFrame")
    elif all(isinstance(p, str) for p in problems):
        df = pd.DataFrame({"problem_id": [f"q{i}" for i in range(len(problems))], "text": list(problems)})
    elif all(isinstance(p, Mapping) for p in problems):
        df = pd.DataFrame([dict(p) for p in problems])
    else:
        raise TypeError("problems must be all strings or all dicts with 'problem_id' and 'text'")
    if len(df) == 0:
        raise ValueError("problems: empty")
    for c in ("problem_id", "text"):
        if c not in df.columns:
            raise ValueError(f"problems: missing {c!r}")
    if not all(isinstance(t, str) and t.strip() for t in df["text"]):
        raise ValueError("problems: every text must be a non-empty string")
    df["problem_id"] = df["problem_id"].astype(str)
    if df["problem_id"].duplicated().any():
        raise ValueError(f"problems: duplicate problem_id(s) {sorted(df.problem_id[df.problem_id.duplicated()])[:5]}")
    return df.reset_index(drop=True)


def rating_frame(problem_ids, probs, *, mass=None, extra: Mapping | None = None) -> pd.DataFrame:
    """A rater's output: problem_id, p1..p7 (rows sum to 1), expected, mass."""
    probs = np.asarray(probs, dtype=float)
    df = pd.DataFrame(probs, columns=list(PROB_COLUMNS))
    df.insert(0, "problem_id", [str(p) for p in problem_ids])
    df["expected"] = probs @ np.asarray(SCALE, dtype=float)
    df["mass"] = 1.0 if mass is None else np.asarray(mass, dtype=float)
    for k, v in (extra or {}).items():
        df[k] = v
    return df
