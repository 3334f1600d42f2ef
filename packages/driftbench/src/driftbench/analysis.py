"""Analyses: KBV, drift, recall, the complexity–turn regression with a word-count control, judge validation.

Definitions (the paper's, as in the official release):

- a *run* is one conversation; its score is its **last** turn's;
- **drift**: adherence < 3 (of 4);
- **KBV** (knows-but-violates): restatement recall ≥ 0.8 **and** adherence < 3; a probe that is a
  verbatim copy of the brief satisfies keyword recall, so copies are flagged and reported beside KBV
  (``kbv_copied``), never silently dropped;
- **complexity**: components (list items) regressed on turn, with the word count as a control
  (``components ~ 1 + turn + words``; the turn coefficient is inflation beyond verbosity);
- **judge validation**: per-constraint labels of a judge against the rule checker: sensitivity,
  miss rate (1 − sensitivity), Cohen's κ.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RUN_KEYS = ("model", "brief_id", "condition", "rep", "run_id")


def _keys(df) -> list[str]:
    return [k for k in RUN_KEYS if k in df.columns]


def final_turns(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its last turn."""
    if "turn" not in df.columns:
        return df
    keys = _keys(df)
    return df.sort_values("turn").groupby(keys, sort=False, dropna=False).tail(1).sort_index()


def _check_frame(scores, cols):
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"scores must be a pandas DataFrame, got {type(scores).__name__}")
    missing = [c for c in cols if c not in scores.columns]
    if missing:
        raise ValueError(f"scores: missing column(s) {missing}")


def kbv_flags(scores: pd.DataFrame, recall_min: float = 0.8, adherence_max: float = 3) -> pd.Series:
    """Per run (last turn): recall ≥ ``recall_min`` and adherence < ``adherence_max``."""
    _check_frame(scores, ["recall", "adherence"])
    last = final_turns(scores)
    return (last["recall"] >= recall_min) & (last["adherence"] < adherence_max)


def kbv_rate(scores: pd.DataFrame, recall_min: float = 0.8, adherence_max: float = 3) -> float:
    """The knows-but-violates rate: the share of runs (last turn each) with restatement recall
    ≥ ``recall_min`` and adherence < ``adherence_max``. Runs without a score are left out.

    Example::

        kbv_rate(driftbench.run(assistant, briefs, conditions=["pressure"]))
    """
    for name, v in (("recall_min", recall_min), ("adherence_max", adherence_max)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
    _check_frame(scores, ["recall", "adherence"])
    last = final_turns(scores).dropna(subset=["recall", "adherence"])
    if not len(last):
        raise ValueError("scores: no run has both recall and adherence")
    return float(((last["recall"] >= recall_min) & (last["adherence"] < adherence_max)).mean())


def summary(scores: pd.DataFrame, by=("model", "condition")) -> pd.DataFrame:
    """Per group: runs, KBV, KBV among copied probes, copies, drift, mean recall, recall when violating."""
    by = [b for b in by if b in scores.columns]
    last = final_turns(scores).copy()
    last["kbv"] = (last["recall"] >= 0.8) & (last["adherence"] < 3)
    last["drift"] = last["adherence"] < 3
    copied = last["copied"] if "copied" in last else False
    last["kbv_copied"] = last["kbv"] & copied
    last["copied_"] = copied
    last["recall_violating"] = last["recall"].where(last["drift"])
    g = last.groupby(by, sort=False)
    return g.agg(runs=("kbv", "size"), kbv=("kbv", "mean"), kbv_copied=("kbv_copied", "mean"),
                 copied=("copied_", "mean"), drift=("drift", "mean"), recall=("recall", "mean"),
                 recall_violating=("recall_violating", "mean"), adherence=("adherence", "mean")).reset_index()


def complexity_slope(df: pd.DataFrame, *, control_words: bool = True) -> float:
    """OLS coefficient of turn in ``complexity ~ 1 + turn (+ words)``."""
    _check_frame(df, ["turn", "complexity"] + (["words"] if control_words else []))
    cols = [np.ones(len(df)), df["turn"].to_numpy(float)]
    if control_words:
        cols.append(df["words"].to_numpy(float))
    x = np.column_stack(cols)
    beta, *_ = np.linalg.lstsq(x, df["complexity"].to_numpy(float), rcond=None)
    return float(beta[1])


def run_bootstrap(df: pd.DataFrame, stat, *, n_resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap over runs (whole conversations resampled): ``(value, lower, upper, samples)``."""
    keys = _keys(df)
    groups = [g for _, g in df.groupby(keys, sort=False)]
    rng = np.random.default_rng(seed)
    value = float(stat(df))
    reps = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(groups), len(groups))
        reps.append(float(stat(pd.concat([groups[i] for i in idx], ignore_index=True))))
    a = (1 - level) / 2
    lo, hi = np.quantile(reps, [a, 1 - a])
    return value, float(min(lo, value)), float(max(hi, value)), reps


def cohen_kappa(a, b) -> float:
    """Cohen's κ of two label sequences (any hashable labels)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(f"a and b must be 1-d and of the same non-zero length, got {a.shape} and {b.shape}")
    labels = np.unique(np.concatenate([a, b]))
    po = float(np.mean(a == b))
    pe = float(sum(np.mean(a == k) * np.mean(b == k) for k in labels))
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


def judge_validation(truth, judged) -> dict:
    """Per-constraint labels (True = violated) of the rule checker and a judge: counts, sensitivity,
    miss rate, specificity and Cohen's κ."""
    t, j = np.asarray(truth, bool), np.asarray(judged, bool)
    tp, fn = int(np.sum(t & j)), int(np.sum(t & ~j))
    tn, fp = int(np.sum(~t & ~j)), int(np.sum(~t & j))
    sens = tp / (tp + fn) if tp + fn else float("nan")
    return {"violations": tp + fn, "detected": tp, "missed": fn, "false_alarms": fp, "sensitivity": sens,
            "miss_rate": 1 - sens, "specificity": tn / (tn + fp) if tn + fp else float("nan"),
            "kappa": cohen_kappa(t, j)}


def labels(rows: pd.DataFrame, column: str) -> np.ndarray:
    """Per-constraint violation labels (flattened over ``rows``) from a column of comma-separated
    violated indices (``truth_violations``, ``judge_violations``) and ``n_constraints``."""
    out = []
    for cell, n in zip(rows[column], rows["n_constraints"]):
        s = {int(x) for x in str(cell).split(",") if x.strip()} if isinstance(cell, str) else set()
        out.extend(j in s for j in range(int(n)))
    return np.asarray(out, bool)
