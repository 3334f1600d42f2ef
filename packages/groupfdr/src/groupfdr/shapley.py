"""Group Shapley values by permutations with block masking (shap has no feature groups).

v_x(S) = mean over background rows b of f(x on the groups in S, b elsewhere) (the "interventional"
value function of shap's Independent masker). φ_g(x) averages v_x(pre_π(g) ∪ {g}) − v_x(pre_π(g))
over permutations π of the groups; ``antithetic=True`` pairs each π with its reverse, which makes the
estimate exact for models with at most pairwise interactions between groups. ``n_permutations="all"``
enumerates every permutation (G ≤ 8): the exact Shapley value.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _group_masks(X, groups):
    """Boolean masks (G, *feature_shape) selecting each group's features, labels sorted.

    For 2-D X (n, p) ``groups`` labels the p columns; for 3-D X (n, T, C) it labels the C channels
    (a group is a block of lags of some channels)."""
    X = np.asarray(X)
    if X.ndim not in (2, 3):
        raise ValueError(f"X must be (n, p) or (n, T, C), got shape {X.shape}")
    width = X.shape[-1]
    labels = np.asarray(groups)
    if labels.shape != (width,):
        raise ValueError(f"groups must have one label per {'column' if X.ndim == 2 else 'channel'} "
                         f"({width}), got shape {labels.shape}")
    uniq = np.unique(labels)
    masks = np.stack([np.broadcast_to(labels == u, X.shape[1:]) for u in uniq])
    return uniq, masks


def _predict(f, Z, batch: int = 65536) -> np.ndarray:
    out = [np.asarray(f(Z[i:i + batch]), dtype=float).reshape(-1) for i in range(0, len(Z), batch)]
    return np.concatenate(out)


def _values_along(f, X, background, masks, order) -> np.ndarray:
    """(n, G) marginal contributions of the groups when added in ``order``."""
    n, m, G = len(X), len(background), len(masks)
    present = np.zeros(X.shape[1:], bool)
    steps = []
    for k in range(G + 1):
        if k:
            present = present | masks[order[k - 1]]
        steps.append(present.copy())
    steps = np.stack(steps)  # (G+1, *feat)
    # rows: step × x × background
    comp = np.where(steps[:, None, None], X[None, :, None], background[None, None, :])
    v = _predict(f, comp.reshape(-1, *X.shape[1:])).reshape(G + 1, n, m).mean(-1)  # (G+1, n)
    out = np.empty((n, G))
    out[:, order] = (v[1:] - v[:-1]).T
    return out


def group_permutation_shap(f, X, groups, background, n_permutations=10, *, antithetic: bool = True,
                           random_state=None) -> np.ndarray:
    """Group Shapley values of ``f`` at the rows of ``X``.

    Args:
        f: callable mapping an array shaped like ``X`` (any number of rows) to (rows,) predictions.
        X: (n, p) or (n, T, C) inputs to explain.
        groups: one label per column (2-D) or channel (3-D); output columns follow sorted labels.
        background: (m, ...) rows standing in for absent groups.
        n_permutations: permutations to average (each with its reverse when ``antithetic``), or
            ``"all"`` for exact enumeration (G ≤ 8).

    Returns:
        (n, G) Shapley values; each row sums to f(x) − mean_b f(b) (efficiency).

    Example:
        >>> import numpy as np
        >>> X = np.arange(6.0).reshape(2, 3)
        >>> phi = group_permutation_shap(lambda Z: Z.sum(1), X, [0, 0, 1], np.zeros((1, 3)), "all")
        >>> phi.tolist()
        [[1.0, 2.0], [7.0, 5.0]]
    """
    X = np.asarray(X, float)
    background = np.asarray(background, float)
    if background.ndim != X.ndim or background.shape[1:] != X.shape[1:] or len(background) == 0:
        raise ValueError(f"background must be (m, {', '.join(map(str, X.shape[1:]))}) with m ≥ 1, got {background.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(background))):
        raise ValueError("X and background must be finite (found NaN or inf)")
    _, masks = _group_masks(X, groups)
    G = len(masks)
    if n_permutations == "all":
        if G > 8:
            raise ValueError(f"n_permutations='all' enumerates G! permutations; G={G} is too many (≤ 8)")
        orders = [np.array(p) for p in itertools.permutations(range(G))]
    else:
        if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
            raise ValueError(f"n_permutations must be a positive int or 'all', got {n_permutations!r}")
        rng = np.random.default_rng(random_state)
        orders = []
        for _ in range(int(n_permutations)):
            o = rng.permutation(G)
            orders += [o, o[::-1]] if antithetic else [o]
    phi = np.zeros((len(X), G))
    for o in orders:
        phi += _values_along(f, X, background, masks, o)
    return phi / len(orders)


def exact_group_shapley(f, X, groups, background) -> np.ndarray:
    """Exact group Shapley values by subset enumeration (reference for tests; G ≤ 12)."""
    X = np.asarray(X, float)
    background = np.asarray(background, float)
    _, masks = _group_masks(X, groups)
    G = len(masks)
    if G > 12:
        raise ValueError(f"exact enumeration needs G ≤ 12, got {G}")
    n, m = len(X), len(background)
    v = {}
    for r in range(G + 1):
        for S in itertools.combinations(range(G), r):
            present = np.zeros(X.shape[1:], bool)
            for g in S:
                present |= masks[g]
            comp = np.where(present[None, None], X[:, None], background[None])
            v[S] = _predict(f, comp.reshape(-1, *X.shape[1:])).reshape(n, m).mean(1)
    phi = np.zeros((n, G))
    for g in range(G):
        others = [h for h in range(G) if h != g]
        for r in range(G):
            w = math.factorial(r) * math.factorial(G - r - 1) / math.factorial(G)
            for S in itertools.combinations(others, r):
                phi[:, g] += w * (v[tuple(sorted(S + (g,)))] - v[S])
    return phi
