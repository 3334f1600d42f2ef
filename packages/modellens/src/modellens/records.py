"""Leaderboard records: schema, metric direction, per-(dataset, metric) z-scores, cold-start splits.

A record is ``(model, dataset, task, metric, score)``. Scores are *oriented* so that higher is
better (a lower-is-better metric such as log-loss or RMSE is negated), then z-scored within each
(dataset, metric) group: the model learns where a model stands among the others on that dataset,
not the metric's scale. Splits hold out *entities* (models, datasets or both), never cells, except
``completion`` (held-out cells of seen models on seen datasets, the matrix-completion setting).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from paperworks import check_float, check_int

COLUMNS = ("model", "dataset", "task", "metric", "score")
SPLIT_MODES = ("completion", "new_model", "new_dataset", "new_pair")

#: declared metric directions (case-insensitive): True = higher is better
METRIC_DIRECTION: dict[str, bool] = {
    **{m: True for m in ("accuracy", "acc", "balanced_accuracy", "f1", "f1_macro", "f1_micro", "f1_weighted",
                         "precision", "recall", "auc", "roc_auc", "auroc", "ap", "average_precision", "r2",
                         "exact_match", "em", "bleu", "rouge", "rouge-l", "map", "mrr", "ndcg", "top1", "top5",
                         "pass@1", "spearman", "pearson", "mcc", "iou", "miou", "dice")},
    **{m: False for m in ("log_loss", "logloss", "cross_entropy", "rmse", "mse", "mae", "mape", "error",
                          "error_rate", "wer", "cer", "perplexity", "ppl", "brier", "loss")},
}


def higher_is_better(metric: str, extra: dict[str, bool] | None = None) -> bool:
    """Direction of ``metric`` from the declared table (or ``extra``); an unknown metric is an error."""
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string, got {type(metric).__name__}")
    key = metric.strip().lower()
    table = {**METRIC_DIRECTION, **{k.lower(): bool(v) for k, v in (extra or {}).items()}}
    if key not in table:
        raise ValueError(f"metric {metric!r} has no declared direction; declare it with "
                         f"metric_directions={{{metric!r}: True or False}} (True = higher is better); known: "
                         f"{', '.join(sorted(table))}")
    return table[key]


class RecordsReport(dict):
    """What :func:`validate_records` dropped: ``{"skipped": n, "lines": [...]}``."""


def validate_records(records, *, metric_directions: dict[str, bool] | None = None,
                     return_report: bool = False):
    """Check the schema, drop non-numeric scores (counted, with their row numbers), refuse duplicates.

    Args:
        records: a DataFrame with columns ``model, dataset, task, metric, score``.
        metric_directions: extra ``{metric: higher_is_better}`` entries for metrics not in the table.

    Returns:
        A clean copy (``score`` float, names str); with ``return_report=True`` also a dict
        ``{"skipped": count, "rows": [index, ...]}`` of the rows whose score was not a finite number.
    """
    if not isinstance(records, pd.DataFrame):
        raise TypeError(f"records must be a pandas DataFrame, got {type(records).__name__}")
    missing = [c for c in COLUMNS if c not in records.columns]
    if missing:
        raise ValueError(f"records is missing column(s) {missing}; expected {list(COLUMNS)}")
    df = records[list(COLUMNS)].copy()
    for c in ("model", "dataset", "task", "metric"):
        if df[c].isna().any():
            raise ValueError(f"records column {c!r} has empty values (rows {list(df.index[df[c].isna()][:5])})")
        df[c] = df[c].astype(str)
    raw = df["score"]
    if raw.dtype == bool:
        raise TypeError("records column 'score' holds booleans, expected numbers")
    num = pd.to_numeric(raw, errors="coerce") if raw.dtype == object else raw.astype(float)
    bad = ~np.isfinite(num.to_numpy(dtype=float))
    df["score"] = num.astype(float)
    report = RecordsReport(skipped=int(bad.sum()), rows=[int(i) for i in df.index[bad]])
    df = df[~bad]
    if df.empty:
        raise ValueError("records has no row with a finite numeric score")
    for m in df["metric"].unique():
        higher_is_better(m, metric_directions)
    key = df["metric"].str.lower()
    dup = pd.DataFrame({"model": df["model"], "dataset": df["dataset"], "metric": key}).duplicated(keep=False)
    if dup.any():
        ex = df[dup].head(3)[["model", "dataset", "metric"]].to_dict("records")
        raise ValueError(f"records has {int(dup.sum())} duplicate (model, dataset, metric) rows, e.g. {ex}; "
                         "aggregate them first (e.g. the mean over runs)")
    tasks = df.groupby("dataset")["task"].nunique()
    if (tasks > 1).any():
        raise ValueError(f"dataset(s) {list(tasks.index[tasks > 1][:3])} appear with more than one task")
    df = df.reset_index(drop=True)
    return (df, report) if return_report else df


def load_records(path, *, metric_directions: dict[str, bool] | None = None, return_report: bool = False):
    """Read a CSV (or ``.csv.gz``) of records ``model, dataset, task, metric, score``.

    Rows whose score is not a finite number are skipped and counted (``return_report=True`` gives
    their 1-based line numbers in the file, header = line 1); unknown metric directions and
    duplicate (model, dataset, metric) rows are errors.
    """
    df = pd.read_csv(path, dtype={"model": str, "dataset": str, "task": str, "metric": str, "score": object})
    df, report = validate_records(df, metric_directions=metric_directions, return_report=True)
    report["lines"] = [r + 2 for r in report.pop("rows")]
    return (df, report) if return_report else df


def normalise(records: pd.DataFrame, metric_directions: dict[str, bool] | None = None) -> pd.DataFrame:
    """Add ``oriented`` (higher is better) and ``z`` (z-score within each (dataset, metric)) columns.

    A group with one record or no spread gets z = 0.
    """
    df = records.copy()
    sign = df["metric"].map(lambda m: 1.0 if higher_is_better(m, metric_directions) else -1.0)
    df["oriented"] = sign * df["score"]
    g = df.groupby(["dataset", "metric"])["oriented"]
    mu, sd = g.transform("mean"), g.transform("std", ddof=0)
    df["z"] = np.where(sd > 1e-12, (df["oriented"] - mu) / sd.where(sd > 1e-12, 1.0), 0.0)
    return df


# splits -------------------------------------------------------------------------------------------

@dataclass
class Split:
    """A cold-start split: ``train``/``test`` records and the held-out ``models``/``datasets``.

    Unpacks like scikit-learn's ``train_test_split``: ``train, test = cold_start_split(records, mode)``.
    """

    mode: str
    train: pd.DataFrame
    test: pd.DataFrame
    models: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)

    def __iter__(self):
        return iter((self.train, self.test))


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9.]+", name.lower()) if t}


def check_name_leakage(model_names, dataset_names) -> None:
    """Raise when a model name contains a (held-out) dataset's name: the ranking would leak through names.

    A dataset name leaks when its whole name appears in a model name (case-insensitive), or all of
    its name tokens of ≥ 3 characters do (``resnet-finetuned-wine`` leaks ``wine``).
    """
    bad = []
    for d in dataset_names:
        dl = str(d).lower()
        toks = {t for t in _tokens(dl) if len(t) >= 3}
        for m in model_names:
            ml = str(m).lower()
            if (len(dl) >= 3 and dl in ml) or (toks and toks <= _tokens(ml)):
                bad.append((str(m), str(d)))
    if bad:
        raise ValueError(f"name leakage: {len(bad)} model name(s) contain a held-out dataset's name, e.g. "
                         f"{bad[:3]}; rename the models or drop them")


def cold_start_split(records: pd.DataFrame, mode: str, frac: float = 0.2, random_state=None, *,
                     metric_directions: dict[str, bool] | None = None) -> Split:
    """Hold out entities: ``new_model``, ``new_dataset``, ``new_pair`` (both), or ``completion`` (cells).

    - ``new_model``: a fraction ``frac`` of models is held out; train has no record of them, test
      has all their records.
    - ``new_dataset``: likewise for datasets.
    - ``new_pair``: ``frac`` of models *and* of datasets; train has no record touching either, test
      has the records of held-out datasets (any model; held-out models are entirely unseen).
    - ``completion``: a fraction ``frac`` of (model, dataset) cells of datasets and models that keep
      at least two cells in train; every metric of a cell goes to the same side.

    The held-out datasets' names must not appear in any model name (:func:`check_name_leakage`).
    """
    if mode not in SPLIT_MODES:
        raise ValueError(f"mode must be one of {SPLIT_MODES}, got {mode!r}")
    frac = check_float(frac, "frac", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
    df = validate_records(records, metric_directions=metric_directions)
    rng = np.random.default_rng(random_state)
    models, datasets = np.array(sorted(df["model"].unique())), np.array(sorted(df["dataset"].unique()))

    def pick(names):
        k = max(1, int(round(frac * len(names))))
        if k >= len(names):
            raise ValueError(f"frac={frac} holds out all {len(names)} entities; lower it")
        return sorted(rng.choice(names, size=k, replace=False).tolist())

    if mode == "completion":
        cells = df[["model", "dataset"]].drop_duplicates().to_numpy()
        order = rng.permutation(len(cells))
        k = max(1, int(round(frac * len(cells))))
        held = set(map(tuple, cells[order[:k]]))
        key = list(zip(df["model"], df["dataset"]))
        is_test = np.array([c in held for c in key])
        train, test = df[~is_test], df[is_test]
        # cells of entities that would vanish from train go back to train
        back = ~test["model"].isin(train["model"]) | ~test["dataset"].isin(train["dataset"])
        train, test = pd.concat([train, test[back]]), test[~back]
        return Split(mode, train.reset_index(drop=True), test.reset_index(drop=True))
    hm = pick(models) if mode in ("new_model", "new_pair") else []
    hd = pick(datasets) if mode in ("new_dataset", "new_pair") else []
    check_name_leakage(models, hd)
    touch = df["model"].isin(hm) | df["dataset"].isin(hd)
    test_rows = df["model"].isin(hm) if mode == "new_model" else df["dataset"].isin(hd)
    return Split(mode, df[~touch].reset_index(drop=True), df[test_rows].reset_index(drop=True), hm, hd)


def check_int_k(k, name: str = "k") -> int:
    return check_int(k, name, minimum=1)
