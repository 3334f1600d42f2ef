"""``tcgap diagnose data.path=FILE``: γ̂_min and the TC gap of a learner on *your* backbone's features;
``tcgap predict model=learner.pt data.path=X.npy``: class-IL predictions from a saved learner, no training data.

``data.path`` is an ``.npz`` with ``X`` (n, d) features, ``y`` (n,) integer labels, ``task_of_class`` (an
integer array indexed by class, or ``tasks``: one task id per row) and optionally ``split`` (one of
``train``/``gamma``/``test`` per row). Without ``split`` the rows are split at random, stratified by class
(``data.gamma_fraction``, ``data.test_fraction``). Rows with non-finite features are skipped and counted.
Writes ``gaps.csv``, ``learner.pt`` (the class-IL learner, ``tcgap.load_learner``) and ``results.json``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from paperworks import Claim
from paperworks.results import write_metrics_csv
from tcgap.data import split_tasks
from tcgap.experiments import make_learner
from tcgap.gap import tc_gap
from tcgap.learners import load_learner
from tcgap.margin import gamma_min

log = logging.getLogger(__name__)


def load_features(path, *, gamma_fraction=0.25, test_fraction=0.25, seed=0) -> dict:
    """Read a user's ``.npz`` (see the module docstring) into train / gamma / test splits and a task map."""
    path = Path(str(path))
    if not path.exists():
        raise FileNotFoundError(f"data.path {path} does not exist")
    if path.suffix != ".npz":
        raise ValueError(f"data.path must be an .npz file with X, y and task_of_class (or tasks), got {path.name}")
    with np.load(path, allow_pickle=False) as f:
        keys = set(f.files)
        for k in ("X", "y"):
            if k not in keys:
                raise ValueError(f"{path.name} has no array {k!r} (has {sorted(keys)})")
        X, y = np.asarray(f["X"], float), np.asarray(f["y"])
        task_of = np.asarray(f["task_of_class"]) if "task_of_class" in keys else None
        tasks = np.asarray(f["tasks"]) if "tasks" in keys else None
        split = np.asarray(f["split"]).astype(str) if "split" in keys else None
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
        raise ValueError("y must hold non-negative integer class labels")
    if task_of is None:
        if tasks is None:
            raise ValueError(f"{path.name} needs task_of_class (one task per class) or tasks (one per row)")
        task_of = np.full(int(y.max()) + 1, -1)
        for c in np.unique(y):
            t = np.unique(tasks[y == c])
            if t.size != 1:
                raise ValueError(f"class {c} appears in tasks {t.tolist()}: a class must belong to one task")
            task_of[c] = t[0]
    ok = np.all(np.isfinite(X), 1)
    skipped = np.flatnonzero(~ok).tolist()
    X, y = X[ok], y[ok]
    if split is None:
        rng = np.random.default_rng(seed)
        split = np.empty(len(y), dtype=object)
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            n_g, n_t = int(round(gamma_fraction * idx.size)), int(round(test_fraction * idx.size))
            split[idx[:n_g]], split[idx[n_g:n_g + n_t]], split[idx[n_g + n_t:]] = "gamma", "test", "train"
        split = split.astype(str)
    else:
        split = split[ok]
        bad = set(np.unique(split)) - {"train", "gamma", "test"}
        if bad:
            raise ValueError(f"split must be train, gamma or test per row, found {sorted(bad)}")
    out = {k: (X[split == k], y[split == k]) for k in ("train", "gamma", "test")}
    for k, (Xk, _) in out.items():
        if len(Xk) == 0:
            raise ValueError(f"the {k} split is empty")
    out.update(task_of_class=task_of, skipped_rows=skipped)
    return out


def run_diagnose(cfg, out_dir: Path | None = None) -> dict:
    d = cfg.data
    if d.path is None:
        raise ValueError("tcgap diagnose needs data.path=FILE.npz (X, y, task_of_class or tasks[, split])")
    data = load_features(d.path, gamma_fraction=float(d.gamma_fraction), test_fraction=float(d.test_fraction),
                         seed=int(cfg.seed))
    t = data["task_of_class"]
    present = np.unique(np.concatenate([data[k][1] for k in ("train", "gamma", "test")]))
    order = sorted({int(t[c]) for c in present})
    remap = {old: new for new, old in enumerate(order)}  # tasks numbered in the order given
    t = np.array([remap.get(int(v), -1) for v in t])
    train, test = split_tasks(*data["train"], t), split_tasks(*data["test"], t)
    g_task = gamma_min(*data["gamma"], t, shrinkage=cfg.shrinkage, centroids="task")
    g_class = gamma_min(*data["gamma"], t, shrinkage=cfg.shrinkage, centroids="class")
    learner = make_learner(str(cfg.learner), cfg, int(cfg.seed))
    rows = []
    for reading in ("joint", "task_il"):
        r = tc_gap(learner, train, test, reading=reading, gamma_data=data["gamma"], shrinkage=cfg.shrinkage)
        rows.append({"learner": str(cfg.learner), "reading": reading, "gamma_task": g_task, "gamma_class": g_class,
                     **r})
    log.info("γ̂_min = %.3f (task centroids), %.3f (class pairs); gap (a) %.4f, gap (b) %.4f ≤? %.4g", g_task,
             g_class, rows[0]["gap"], rows[1]["gap"], rows[1]["bound"])
    if out_dir is not None:
        write_metrics_csv(Path(out_dir) / "gaps.csv", rows)
        from sklearn.base import clone

        m = clone(learner)
        for X, y in train:
            m.partial_fit(X, y)
        m.save(Path(out_dir) / "learner.pt")
    check = Claim.check("task_il_gap_nonnegative", "A class-IL hit is a task-IL hit (reading b counts confusions).",
                        "samples right without the task id and wrong with it", rows[1]["n_rescued"], threshold=0,
                        better="lower")
    return {"claims": [], "checks": [check], "metrics": rows,
            "extra": {"gamma_task": g_task, "gamma_class": g_class, "bound": rows[1]["bound"],
                      "gap_joint": rows[0]["gap"], "gap_task_il": rows[1]["gap"],
                      "skipped_rows": data["skipped_rows"], "data_path": str(d.path),
                      "n": {k: int(len(data[k][1])) for k in ("train", "gamma", "test")}}}


def run_predict(cfg, out_dir: Path | None = None) -> dict:
    if cfg.model is None or cfg.data.path is None:
        raise ValueError("tcgap predict needs model=learner.pt and data.path=X.npy (or an .npz with X)")
    m = load_learner(cfg.model)
    path = Path(str(cfg.data.path))
    if not path.exists():
        raise FileNotFoundError(f"data.path {path} does not exist")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            X = np.asarray(f["X"], float)
    elif path.suffix == ".npy":
        X = np.asarray(np.load(path, allow_pickle=False), float)
    else:
        raise ValueError(f"data.path must be .npy or .npz, got {path.name}")
    ok = np.all(np.isfinite(X), 1) if X.ndim == 2 else None
    if ok is None:
        raise ValueError(f"X must be (n, d), got shape {X.shape}")
    pred = m.predict(X[ok])
    rows = [{"row": int(i), "prediction": int(p)} for i, p in zip(np.flatnonzero(ok), pred)]
    if out_dir is not None:
        write_metrics_csv(Path(out_dir) / "predictions.csv", rows)
    check = Claim.check("predictions_are_learned_classes", "Every prediction is a class the saved learner learned.",
                        "predictions outside classes_", int(np.sum(~np.isin(pred, m.classes_))), threshold=0,
                        better="lower")
    return {"claims": [], "checks": [check], "metrics": rows,
            "extra": {"model": str(cfg.model), "learner": type(m).__name__, "n": int(len(rows)),
                      "skipped_rows": np.flatnonzero(~ok).tolist()}}
