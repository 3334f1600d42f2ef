"""Importer for the public DriftBench release (transcripts and judge scores), from a user's copy.

The release (Hugging Face ``anonymous-driftbench/DriftBench``, CC-BY-4.0; nothing is downloaded
here) holds ``briefs/*.yaml``, ``transcripts/*.jsonl`` (one run per line:
``{"metadata": {"run_id", "brief_id", "model_id", "condition", "repetition"}, "messages": [{"role",
"content", "is_probe"}]}``) and ``scores/judge_*.jsonl`` (``run_id``, ``objective_fidelity``,
``constraint_adherence``, ``alternative_coverage``, ``complexity_inflation`` on 0–4), also under
``openweight/``, ``monitored/``, ``followup_*/``. Malformed records are skipped and counted
(``df.attrs["skipped"]``, with file and line).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pandas as pd

from driftbench.briefs import load_briefs
from driftbench.checker import copied_brief, count_components, keyword_recall, word_count

log = logging.getLogger(__name__)
CONDITION_NAMES = {"single_shot": "single_shot", "multi_turn_neutral": "neutral", "multi_turn_pressure": "pressure",
                   "multi_turn_pressure_rigor": "pressure_rigor", "checkpointed_pressure": "checkpoint",
                   "checkpointed": "checkpoint"}
SCORE_FIELDS = {"objective_fidelity": "fidelity", "constraint_adherence": "adherence",
                "alternative_coverage": "coverage", "complexity_inflation": "complexity_inflation"}


def _jsonl(path: Path, skipped: list):
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as e:
            skipped.append(f"{path}:{i}: not JSON ({e.msg})")


def _score(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 4:
        return None
    return float(v)


def load_driftbench(path, *, judge: str = "judge") -> pd.DataFrame:
    """Read a copy of the public DriftBench release into the results frame.

    Args:
        path: the release's root folder.
        judge: which score files to use (``scores/<judge>_*.jsonl``: ``judge``, ``auditor``, ``blind``, ...).

    Returns:
        One row per assistant turn: ``model``, ``brief_id``, ``condition`` (our names), ``turn``,
        ``rep``, ``run_id``, ``recall`` (keyword recall of the probe after that turn; NaN without the
        release's briefs or a probe), ``copied``, ``complexity`` (components by the structure extractor),
        ``words``; the judge's ``adherence``, ``fidelity``, ``coverage`` and ``complexity_inflation``
        on each run's last turn. ``df.attrs["skipped"]`` lists the malformed records skipped.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"path: {root} is not a folder (point it at a copy of the DriftBench release)")
    skipped: list[str] = []
    briefs = {}
    if (root / "briefs").is_dir():
        try:
            briefs = {b.id: b for b in load_briefs(root / "briefs")}
        except ValueError as e:
            skipped.append(f"{root / 'briefs'}: briefs not loaded ({e})")
    scores = {}
    for f in sorted(root.rglob(f"scores/{judge}_*.jsonl")):
        for i, rec in _jsonl(f, skipped):
            vals = {k: _score(rec.get(k)) if isinstance(rec, dict) else None for k in SCORE_FIELDS}
            if not isinstance(rec, dict) or not isinstance(rec.get("run_id"), str) or vals["constraint_adherence"] is None:
                skipped.append(f"{f}:{i}: no run_id or constraint_adherence in 0-4")
                continue
            scores[rec["run_id"]] = vals
    rows = []
    files = sorted(root.rglob("transcripts/*.jsonl"))
    if not files:
        raise ValueError(f"path: {root} holds no transcripts/*.jsonl (is it the DriftBench release?)")
    for f in files:
        for i, rec in _jsonl(f, skipped):
            try:
                meta, msgs = rec["metadata"], rec["messages"]
                run_id, brief_id, model = str(meta["run_id"]), str(meta["brief_id"]), str(meta["model_id"])
                cond = CONDITION_NAMES.get(meta["condition"], str(meta["condition"]))
                rep = int(meta.get("repetition", 0) or 0)
                if not isinstance(msgs, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str)
                                                         for m in msgs):
                    raise TypeError("messages must be a list of {role, content}")
            except (KeyError, TypeError, ValueError) as e:
                skipped.append(f"{f}:{i}: malformed transcript ({type(e).__name__}: {e})")
                continue
            brief = briefs.get(brief_id)
            turn_rows = []
            for m in msgs:
                if m.get("role") != "assistant":
                    continue
                if m.get("is_probe"):
                    if turn_rows and brief is not None:
                        turn_rows[-1]["recall"] = keyword_recall(brief, m["content"])
                        turn_rows[-1]["copied"] = copied_brief(brief, m["content"])
                    continue
                turn_rows.append({"model": model, "brief_id": brief_id, "condition": cond, "turn": len(turn_rows) + 1,
                                  "rep": rep, "run_id": run_id, "recall": float("nan"), "copied": False,
                                  "complexity": count_components(m["content"]), "words": word_count(m["content"])})
            if not turn_rows:
                skipped.append(f"{f}:{i}: no assistant turn")
                continue
            for k, v in scores.get(run_id, dict.fromkeys(SCORE_FIELDS)).items():
                for r in turn_rows:
                    r[SCORE_FIELDS[k]] = float("nan")
                turn_rows[-1][SCORE_FIELDS[k]] = float("nan") if v is None else v
            rows.extend(turn_rows)
    if skipped:
        log.warning("load_driftbench: skipped %d malformed record(s), e.g. %s", len(skipped), skipped[0])
    df = pd.DataFrame(rows)
    df.attrs["skipped"] = skipped
    return df
