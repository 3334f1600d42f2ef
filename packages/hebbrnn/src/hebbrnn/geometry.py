"""Ordinal geometry of hidden states: global (chunk) rank × local (within-chunk) rank.

From the abstract and Fan et al. (2025): states are regressed on global- and local-rank one-hots (an
additive two-factor model); each factor's coding subspace is spanned by its centred condition-mean
coefficients (``n_levels − 1`` dimensions), and the **principal angles** between the two subspaces
measure their orthogonality (scipy's ``subspace_angles``). **Cross-condition decoding** (scikit-learn)
trains a decoder of one factor on some levels of the other and tests it on the held-out level (an
abstract, factorised code transfers). The **PCA variance of the grid** is the share of the condition
means' variance in their top two principal components.

Random subspaces in high dimension are nearly orthogonal anyway, so every statistic comes with a
**shuffled-label null**: the (global, local) label pairs permuted across states ``n_null`` times, the
same statistics recomputed. ``p_*`` is the permutation p-value ``(1 + #{null ≥ observed}) / (1 + n_null)``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import subspace_angles

from paperworks import check_int


def _onehot_design(labels: np.ndarray, levels: np.ndarray) -> np.ndarray:
    X = (labels[:, None] == levels[None, :]).astype(float)
    return X - X.mean(0)


def _coding_subspaces(S: np.ndarray, g: np.ndarray, loc: np.ndarray, gl: np.ndarray, ll: np.ndarray):
    """Least-squares coefficients of the additive model; returns the two coefficient blocks (levels, H)."""
    Xg, Xl = _onehot_design(g, gl), _onehot_design(loc, ll)
    X = np.hstack([Xg[:, 1:], Xl[:, 1:]])  # drop one level of each (the span is the same)
    B, *_ = np.linalg.lstsq(X, S - S.mean(0), rcond=None)
    return B[: len(gl) - 1], B[len(gl) - 1:], X, B


def _stats(S, g, loc, gl, ll) -> dict:
    Bg, Bl, X, B = _coding_subspaces(S, g, loc, gl, ll)
    ang = np.degrees(subspace_angles(Bg.T, Bl.T))
    Sc = S - S.mean(0)
    resid = Sc - X @ B
    r2 = 1.0 - float((resid**2).sum() / max((Sc**2).sum(), 1e-300))
    means = np.array([S[(g == a) & (loc == b)].mean(0) for a in gl for b in ll
                      if np.any((g == a) & (loc == b))])
    means = means - means.mean(0)
    sv = np.linalg.svd(means, compute_uv=False) ** 2
    return {"mean_angle": float(ang.mean()), "min_angle": float(ang.min()), "angles": ang.tolist(),
            "additive_r2": r2, "pca2_variance": float(sv[:2].sum() / max(sv.sum(), 1e-300))}


def cross_condition_decoding(S, target, other) -> float:
    """Mean accuracy of a linear decoder of ``target`` trained on all levels of ``other`` but one and tested
    on the held-out level (leave-one-level-out over ``other``)."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    accs = []
    for lev in np.unique(other):
        tr, te = other != lev, other == lev
        if len(np.unique(target[tr])) < 2 or not te.any():
            continue
        clf = make_pipeline(StandardScaler(), RidgeClassifier(alpha=1.0)).fit(S[tr], target[tr])
        seen = np.isin(target[te], np.unique(target[tr]))
        if seen.any():
            accs.append(float(clf.score(S[te][seen], target[te][seen])))
    return float(np.mean(accs)) if accs else float("nan")


def ordinal_geometry(states, global_rank, local_rank, *, n_null: int = 200, n_null_decode: int = 20,
                     seed: int = 0) -> dict:
    """Orthogonality and abstraction of the global × local rank code in ``states``, against a shuffled null.

    Args:
        states: ``(N, H)`` hidden states (e.g. one per item of each episode, in the blank after it).
        global_rank, local_rank: ``(N,)`` integer labels (chunk index, position within the chunk).
        n_null: label shuffles for the angle, R² and PCA nulls; ``n_null_decode``: shuffles for the
            (costlier) cross-condition decoding null.

    Returns:
        dict with ``mean_angle`` (degrees, mean of the principal angles between the global and local
        coding subspaces), ``min_angle``, ``angles``, ``additive_r2`` (state variance explained by the
        additive rank model), ``pca2_variance`` (condition means' variance in two PCs),
        ``decode_global``/``decode_local`` (cross-condition decoding accuracy), each with ``null_<key>``
        (mean over shuffles), ``null_<key>_sd`` and ``p_<key>``; and ``chance_global``/``chance_local``.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> g, l = np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3)
        >>> S = rng.normal(size=(9, 20))
        >>> sorted(ordinal_geometry(S, g, l, n_null=5, n_null_decode=2))[:3]
        ['additive_r2', 'angles', 'chance_global']
    """
    S = np.asarray(states, dtype=float)
    g = np.asarray(global_rank)
    loc = np.asarray(local_rank)
    if S.ndim != 2 or S.shape[0] < 4:
        raise ValueError(f"states must have shape (N >= 4, H), got {S.shape}")
    if not np.all(np.isfinite(S)):
        raise ValueError("states must be finite (found NaN or inf)")
    if g.shape != (S.shape[0],) or loc.shape != (S.shape[0],):
        raise ValueError(f"global_rank and local_rank must have shape ({S.shape[0]},), got {g.shape} and {loc.shape}")
    if not (np.issubdtype(g.dtype, np.integer) and np.issubdtype(loc.dtype, np.integer)):
        raise TypeError("global_rank and local_rank must be integer labels")
    gl, ll = np.unique(g), np.unique(loc)
    if len(gl) < 2 or len(ll) < 2:
        raise ValueError("need at least two global and two local rank levels")
    n_null = check_int(n_null, "n_null", minimum=0)
    n_null_decode = check_int(n_null_decode, "n_null_decode", minimum=0)
    rng = np.random.default_rng(seed)
    out = _stats(S, g, loc, gl, ll)
    out["decode_global"] = cross_condition_decoding(S, g, loc)
    out["decode_local"] = cross_condition_decoding(S, loc, g)
    out["chance_global"], out["chance_local"] = 1.0 / len(gl), 1.0 / len(ll)
    keys = ("mean_angle", "additive_r2", "pca2_variance")
    null = {k: [] for k in (*keys, "decode_global", "decode_local")}
    for i in range(max(n_null, n_null_decode)):
        perm = rng.permutation(S.shape[0])
        gp, lp = g[perm], loc[perm]
        if i < n_null:
            st = _stats(S, gp, lp, gl, ll)
            for k in keys:
                null[k].append(st[k])
        if i < n_null_decode:
            null["decode_global"].append(cross_condition_decoding(S, gp, lp))
            null["decode_local"].append(cross_condition_decoding(S, lp, gp))
    for k, vals in null.items():
        v = np.asarray(vals, dtype=float)
        out[f"null_{k}"] = float(v.mean()) if v.size else float("nan")
        out[f"null_{k}_sd"] = float(v.std(ddof=1)) if v.size > 1 else float("nan")
        out[f"p_{k}"] = float((1 + np.sum(v >= out[k])) / (1 + v.size)) if v.size else float("nan")
    return out
