"""Linear probes per layer, the geometry of the necessity and action directions, and transitions.

- :func:`probe_layers`: a class-balanced logistic probe per layer (standardised features), K-fold
  cross-validation grouped by question (stratified, K ≥ 5); AUROC of the pooled out-of-fold scores
  with a group-bootstrap interval, balanced accuracy, and the direction fitted on all the data.
- :func:`direction_geometry`: per layer, the cosine of the necessity and action directions, raw
  (``w_n·w_a / |w_n||w_a|`` in the residual basis) and whitened (``w_nᵀΣw_a / √(w_nᵀΣw_n · w_aᵀΣw_a)``,
  the correlation of the two probes' logits), beside its references: same-label probes fitted on two
  disjoint halves of the questions, a probe of shuffled labels, random directions (E|cos| ≈ √(2/(πd)),
  RMS 1/√d), and the cosine the labels' correlation alone induces (a probe of a surrogate action label
  drawn from the observed P(action | necessity), so it carries no action-specific information).
- :func:`transition_table`: cognition (the out-of-fold necessity probe) → action; each mismatch is a
  *cognition* error (probe wrong) or a *transition* error (probe right, action wrong).

The official code's probe is BCE-with-logits on a 70/30 split with a positive-class weight; here the
balanced logistic regression of scikit-learn with grouped K-fold (the issue's clarification).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.preprocessing import StandardScaler


def _check(H, y, groups, name="y"):
    H = np.asarray(H)
    if H.ndim != 3 or not np.issubdtype(H.dtype, np.number):
        raise ValueError(f"H must be a numeric array (n, layers + 1, d), got shape {H.shape}")
    H = H.astype(float, copy=False)
    if not np.all(np.isfinite(H)):
        raise ValueError("H must be finite (found NaN or inf)")
    y = np.asarray(y)
    if y.shape != (H.shape[0],):
        raise ValueError(f"{name} must have shape ({H.shape[0]},), got {y.shape}")
    if y.dtype != bool and not np.isin(y, (0, 1)).all():
        raise ValueError(f"{name} must be binary (bool or 0/1)")
    y = y.astype(int)
    if len(np.unique(y)) < 2:
        raise ValueError(f"{name} has one class only ({int(y[0])}): a probe needs both")
    if groups is None:
        raise ValueError("groups is required (the question of each row), so no question lands in two folds")
    groups = np.asarray(groups)
    if groups.shape != (H.shape[0],):
        raise ValueError(f"groups must have shape ({H.shape[0]},), got {groups.shape}")
    return H, y, groups


def _layers(layers, n_layers):
    if layers is None:
        return list(range(n_layers))
    out = []
    for x in layers:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not -n_layers <= x < n_layers:
            raise ValueError(f"layers: {x!r} is out of range for {n_layers} hidden-state layers (0..{n_layers - 1})")
        out.append(int(x) % n_layers)
    return out


def _fit(X, y, C, seed=0):
    sc = StandardScaler().fit(X)
    lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000, random_state=seed)
    lr.fit(sc.transform(X), y)
    return sc, lr


def _direction(sc, lr) -> np.ndarray:
    """The probe's weight vector in the residual basis (``coef / scale``)."""
    return lr.coef_[0] / sc.scale_


def _cos(a, b) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else float("nan")


def fold_ids(y, groups, *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """The fold of each row: stratified K-fold over whole groups (a question never spans two folds)."""
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 5:
        raise ValueError(f"folds must be an integer >= 5, got {folds!r}")
    n_groups = len(np.unique(groups))
    if n_groups < folds:
        raise ValueError(f"groups: {n_groups} distinct questions, fewer than folds={folds}")
    f = np.empty(len(y), dtype=int)
    cv = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for i, (_, te) in enumerate(cv.split(np.zeros(len(y)), y, groups)):
        f[te] = i
    return f


def _auroc_ci(y, s, gidx, n_groups, n_boot, level, rng):
    vals = []
    for _ in range(n_boot):
        w = rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups))[gidx]
        yy = y[w > 0]
        if len(np.unique(yy)) < 2:
            continue
        vals.append(roc_auc_score(y, s, sample_weight=w))
    a = (1 - level) / 2
    return (float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a))) if vals else (float("nan"), float("nan"))


@dataclass
class ProbeResult:
    """What :func:`probe_layers` returns; arrays indexed by position in ``layers``."""

    layers: list[int]
    auroc: np.ndarray
    auroc_lower: np.ndarray
    auroc_upper: np.ndarray
    balanced_accuracy: np.ndarray
    directions: np.ndarray  # (n_layers, d) in the residual basis
    oof: np.ndarray  # (n, n_layers) out-of-fold probabilities
    folds: np.ndarray  # (n,) the fold of each row

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"layer": self.layers, "auroc": self.auroc, "auroc_lower": self.auroc_lower,
                             "auroc_upper": self.auroc_upper, "balanced_accuracy": self.balanced_accuracy})


def probe_layers(H, y, *, groups, folds: int = 5, layers=None, C: float = 1.0, n_boot: int = 200,
                 level: float = 0.95, seed: int = 0) -> ProbeResult:
    """Class-balanced logistic probes of the binary label ``y`` from each layer of ``H``.

    Args:
        H: ``(n, layers + 1, d)`` states from :func:`toolgap.hidden_states`.
        y: ``(n,)`` binary labels (necessity or action).
        groups: ``(n,)`` question keys: folds are grouped by them.
        folds: K of the grouped, stratified K-fold (≥ 5).
        layers: the layers to probe (default all).
        n_boot: group-bootstrap resamples of the pooled out-of-fold AUROC.

    Returns:
        :class:`ProbeResult`.
    """
    H, y, groups = _check(H, y, groups)
    if not (isinstance(C, (int, float)) and np.isfinite(C) and C > 0):
        raise ValueError(f"C must be a positive finite number, got {C!r}")
    Ls = _layers(layers, H.shape[1])
    f = fold_ids(y, groups, folds=folds, seed=seed)
    _, gidx = np.unique(groups, return_inverse=True)
    rng = np.random.default_rng(seed)
    au, lo, hi, ba, dirs = [], [], [], [], []
    oof = np.zeros((len(y), len(Ls)))
    for j, L in enumerate(Ls):
        X = H[:, L]
        for k in range(folds):
            tr, te = f != k, f == k
            if len(np.unique(y[tr])) < 2:
                oof[te, j] = y[tr].mean()
                continue
            sc, lr = _fit(X[tr], y[tr], C, seed)
            oof[te, j] = lr.predict_proba(sc.transform(X[te]))[:, 1]
        au.append(roc_auc_score(y, oof[:, j]))
        a, b = _auroc_ci(y, oof[:, j], gidx, gidx.max() + 1, n_boot, level, rng)
        lo.append(min(a, au[-1]))
        hi.append(max(b, au[-1]))
        ba.append(balanced_accuracy_score(y, oof[:, j] > 0.5))
        dirs.append(_direction(*_fit(X, y, C, seed)))
    return ProbeResult(Ls, np.array(au), np.array(lo), np.array(hi), np.array(ba), np.array(dirs), oof, f)


def direction_geometry(H, y_necessity, y_action, *, groups, layers=None, C: float = 1.0, n_random: int = 200,
                       seed: int = 0) -> pd.DataFrame:
    """Per layer: the cosine of the necessity and action probe directions and its references.

    Columns: ``layer, cos_raw, cos_white`` (signed), ``same_necessity, same_action`` (probes of one label
    fitted on two disjoint halves of the questions: the upper reference), ``shuffled`` (|cos| of the
    necessity direction with a shuffled-label probe), ``random`` (mean |cos| with random directions),
    ``random_rms`` (1/√d), ``induced`` (the cosine with a probe of a surrogate label drawn from the
    observed P(action | necessity)), ``label_phi`` (the labels' correlation).
    """
    H, yn, groups = _check(H, y_necessity, groups, "y_necessity")
    _, ya, _ = _check(H, y_action, groups, "y_action")
    Ls = _layers(layers, H.shape[1])
    rng = np.random.default_rng(seed)
    ug = np.unique(groups)
    half = np.isin(groups, rng.permutation(ug)[: len(ug) // 2])
    for lab, name in ((yn, "y_necessity"), (ya, "y_action")):
        for part in (half, ~half):
            if len(np.unique(lab[part])) < 2:
                raise ValueError(f"{name}: one half of the questions has one class only (too few examples)")
    p1 = {v: ya[yn == v].mean() for v in (0, 1)}
    surrogate = (rng.random(len(yn)) < np.where(yn == 1, p1[1], p1[0])).astype(int)
    if len(np.unique(surrogate)) < 2:
        surrogate[rng.integers(len(surrogate))] ^= 1
    shuffled = rng.permutation(yn)
    phi = float(np.corrcoef(yn, ya)[0, 1])
    rows = []
    for L in Ls:
        X = H[:, L]
        d = X.shape[1]
        wn, wa = _direction(*_fit(X, yn, C, seed)), _direction(*_fit(X, ya, C, seed))
        S = np.cov(X, rowvar=False)
        denom = np.sqrt(max(wn @ S @ wn, 0) * max(wa @ S @ wa, 0))
        same = {}
        for lab, key in ((yn, "same_necessity"), (ya, "same_action")):
            same[key] = _cos(_direction(*_fit(X[half], lab[half], C, seed)),
                             _direction(*_fit(X[~half], lab[~half], C, seed)))
        R = rng.standard_normal((n_random, d))
        rnd = float(np.mean(np.abs([_cos(wn, r) for r in R]))) if np.linalg.norm(wn) > 0 else float("nan")
        rows.append({
            "layer": L, "d": d,
            "cos_raw": _cos(wn, wa), "cos_white": float(wn @ S @ wa / denom) if denom > 0 else float("nan"),
            **same,
            "shuffled": abs(_cos(wn, _direction(*_fit(X, shuffled, C, seed)))),
            "random": rnd, "random_rms": 1 / np.sqrt(d),
            "induced": _cos(wn, _direction(*_fit(X, surrogate, C, seed))),
            "label_phi": phi,
        })
    return pd.DataFrame(rows)


def transition_table(necessary, cognition, action) -> dict:
    """Cognition → action. ``necessary``: the model-adaptive label; ``cognition``: the necessity the
    (out-of-fold) probe reads; ``action``: whether the model called a tool.

    Returns:
        ``{"table": 2×2 DataFrame (rows: cognition right/wrong; columns: action right/wrong),
        "n", "mismatch", "cognition", "transition", "transition_share"}``: a mismatch (action ≠
        necessary) is a *cognition* error when the probe was wrong too, a *transition* error when the
        probe was right; ``cognition + transition == mismatch``.
    """
    arrs = []
    for name, v in (("necessary", necessary), ("cognition", cognition), ("action", action)):
        a = np.asarray(v)
        if a.ndim != 1 or (a.dtype != bool and not np.isin(a, (0, 1)).all()):
            raise ValueError(f"{name} must be a 1-D binary array")
        arrs.append(a.astype(bool))
    n, c, a = arrs
    if not len(n) == len(c) == len(a):
        raise ValueError(f"necessary, cognition and action must have equal lengths, got {len(n)}, {len(c)}, {len(a)}")
    cog_ok, act_ok = c == n, a == n
    table = pd.DataFrame([[int(np.sum(cog_ok & act_ok)), int(np.sum(cog_ok & ~act_ok))],
                          [int(np.sum(~cog_ok & act_ok)), int(np.sum(~cog_ok & ~act_ok))]],
                         index=["cognition right", "cognition wrong"], columns=["action right", "action wrong"])
    mismatch = int(np.sum(~act_ok))
    trans = int(np.sum(cog_ok & ~act_ok))
    return {"table": table, "n": len(n), "mismatch": mismatch, "cognition": mismatch - trans, "transition": trans,
            "transition_share": trans / mismatch if mismatch else float("nan")}
