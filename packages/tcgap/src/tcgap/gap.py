"""The TC-gap protocol and the pooled slope fit.

Two readings of the task-confusion gap of a CF-free learner (tasks learned one by one, heads frozen):

- ``reading="joint"`` (the brief's): class-IL risk − risk of the *same family* fitted on all classes at
  once. Zero by construction where both fits coincide (NCM, streaming SLDA, FeCAM, RanPAC); non-zero for
  per-task softmax CE heads.
- ``reading="task_il"``: class-IL risk − task-IL risk (the task id given at test time): the cross-task
  error that an exp(−Δ²/8) (Bhattacharyya) bound controls. A class-IL hit is a task-IL hit, so this gap
  is the proportion of test samples right with the task id and wrong without it (a binomial count).

Risks are 0–1 errors. γ̂_min must come from a split disjoint from the test split the gap is measured
on (``gamma_data``); the same split is refused as circular.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone

from paperworks.utils import check_int
from tcgap.margin import check_features, gamma_min


def _tasks(tasks, name):
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__len__") or len(tasks) < 2:
        raise ValueError(f"{name} must be a list of at least two (X, y) tasks")
    out, seen = [], set()
    for t, item in enumerate(tasks):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"{name}[{t}] must be an (X, y) pair")
        X, y = item
        if np.asarray(X).size == 0 or np.asarray(y).size == 0:
            raise ValueError(f"{name}[{t}] is an empty task")
        X = check_features(X, f"{name}[{t}] X")
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"{name}[{t}]: y must have one label per row of X ({X.shape[0]}), got {y.shape}")
        cls = set(np.unique(y).tolist())
        if cls & seen:
            raise ValueError(f"{name}[{t}]: class(es) {sorted(cls & seen)} already appear in an earlier task; "
                             "class-IL tasks must be disjoint")
        seen |= cls
        out.append((X, y))
    return out


def _same_rows(A, B) -> bool:
    if A.shape[1] != B.shape[1]:
        return False
    a = {r.tobytes() for r in np.ascontiguousarray(A)}
    return any(r.tobytes() in a for r in np.ascontiguousarray(B))


def tc_gap(learner, tasks_train, tasks_test, *, reading: str = "joint", gamma_data=None,
           shrinkage="ledoit_wolf", centroids: str = "task") -> dict:
    """Measure the TC gap of ``learner`` (a class from :mod:`tcgap.learners`, cloned, never modified).

    Args:
        learner: an unfitted or fitted estimator with ``partial_fit``/``predict_task_il`` (it is cloned).
        tasks_train, tasks_test: lists of (X, y), one per task, same task order; classes disjoint across tasks.
        reading: ``"joint"`` (class-IL − same family fitted jointly) or ``"task_il"`` (class-IL − task-IL).
        gamma_data: optional (X, y) of a split disjoint from ``tasks_test``; then γ̂_min (shrinkage,
            centroids as given) and the bound exp(−γ̂/8) are returned too.

    Returns:
        dict with ``class_il_risk``, ``reference_risk``, ``gap``, ``n_test``, ``n_confused`` (test samples
        the reference gets right and class-IL wrong), ``n_rescued`` (the reverse), and with
        ``gamma_data`` also ``gamma_min`` and ``bound``.
    """
    if not all(hasattr(learner, a) for a in ("partial_fit", "predict_task_il", "fit", "predict")):
        raise TypeError(f"learner must be a class-IL learner with fit/partial_fit/predict/predict_task_il "
                        f"(e.g. tcgap.SLDA()), got {type(learner).__name__}")
    if reading not in ("joint", "task_il"):
        raise ValueError(f"reading must be 'joint' or 'task_il', got {reading!r}")
    train = _tasks(tasks_train, "tasks_train")
    test = _tasks(tasks_test, "tasks_test")
    if len(train) != len(test):
        raise ValueError(f"tasks_train has {len(train)} tasks, tasks_test {len(test)}")
    for t, ((_, ya), (_, yb)) in enumerate(zip(train, test)):
        if not set(np.unique(yb).tolist()) <= set(np.unique(ya).tolist()):
            raise ValueError(f"tasks_test[{t}] has classes that task {t} of tasks_train does not")
    Xte = np.concatenate([X for X, _ in test])
    yte = np.concatenate([y for _, y in test])
    tid = np.concatenate([np.full(len(y), t) for t, (_, y) in enumerate(test)])
    out = {}
    if gamma_data is not None:
        if not isinstance(gamma_data, (tuple, list)) or len(gamma_data) != 2:
            raise TypeError("gamma_data must be an (X, y) pair")
        Xg = check_features(gamma_data[0], "gamma_data X")
        if _same_rows(Xg, Xte):
            raise ValueError("gamma_data shares samples with tasks_test: estimating γ̂_min and the gap on the "
                             "same split is circular; give γ̂ a held-out split disjoint from the test split")
        task_of = {c.item(): t for t, (_, y) in enumerate(train) for c in np.unique(y)}
        g = gamma_min(Xg, gamma_data[1], task_of, shrinkage=shrinkage, centroids=centroids)
        out.update(gamma_min=g, bound=float(np.exp(-g / 8)))
    out.update(gap_readings(learner, train, (Xte, yte, tid), (reading,))[reading])
    return out


def gap_readings(learner, train, test, readings=("joint", "task_il")) -> dict:
    """Both readings from one class-IL fit (validated inputs: ``test`` = (X, y, task index))."""
    Xte, yte, tid = test
    inc = clone(learner)
    for X, y in train:
        inc.partial_fit(X, y)
    hit = inc.predict(Xte) == yte
    out = {}
    for reading in readings:
        if reading == "joint":
            ref = clone(learner).fit(np.concatenate([X for X, _ in train]), np.concatenate([y for _, y in train]))
            ref_hit = ref.predict(Xte) == yte
        else:
            ref_hit = inc.predict_task_il(Xte, tid) == yte
        r = dict(class_il_risk=float(1 - hit.mean()), reference_risk=float(1 - ref_hit.mean()), n_test=int(yte.size),
                 n_confused=int(np.sum(ref_hit & ~hit)), n_rescued=int(np.sum(hit & ~ref_hit)))
        r["gap"] = r["class_il_risk"] - r["reference_risk"]
        out[reading] = r
    return out


def fit_slope(gammas, gaps, *, n_boot: int = 10000, seed=None, level: float = 0.95):
    """Least-squares slope of log(gap) on γ̂, with a pairs-bootstrap percentile interval.

    Args:
        gammas, gaps: one (γ̂, gap) per configuration × seed; every gap must be > 0.
        n_boot: bootstrap resamples of the points.
        seed: the resampling seed (None: fresh entropy).

    Returns:
        (slope, (low, high)).
    """
    g = np.asarray(gammas, dtype=float)
    v = np.asarray(gaps, dtype=float)
    if g.ndim != 1 or v.shape != g.shape:
        raise ValueError(f"gammas and gaps must be 1-d of the same length, got {g.shape} and {v.shape}")
    if g.size < 3:
        raise ValueError(f"fit_slope needs at least 3 points, got {g.size}")
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(v))):
        raise ValueError("gammas and gaps must be finite")
    if np.any(v <= 0):
        raise ValueError("gaps must be > 0 (log(gap) is regressed); drop or count the non-positive ones first")
    if np.ptp(g) == 0:
        raise ValueError("gammas must not all be equal")
    n_boot = check_int(n_boot, "n_boot", minimum=10)
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    y = np.log(v)

    def slope(gg, yy):
        gc = gg - gg.mean(-1, keepdims=True)
        den = (gc * gc).sum(-1)
        return np.where(den > 0, (gc * (yy - yy.mean(-1, keepdims=True))).sum(-1) / np.where(den > 0, den, 1), np.nan)

    s = float(slope(g, y))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, g.size, (n_boot, g.size))
    bs = slope(g[idx], y[idx])
    bs = bs[np.isfinite(bs)]
    a = (1 - level) / 2
    lo, hi = np.quantile(bs, [a, 1 - a])
    return s, (float(min(lo, s)), float(max(hi, s)))
