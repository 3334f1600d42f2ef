"""Coverage and worst-slab coverage (Cauchois, Gupta & Duchi 2021)."""

from __future__ import annotations

import numpy as np


def coverage(inside) -> float:
    """The fraction of test points inside their regions."""
    inside = np.asarray(inside, dtype=bool).ravel()
    if inside.size == 0:
        raise ValueError("inside must be non-empty")
    return float(inside.mean())


def worst_slab_coverage(X, inside, *, delta: float = 0.2, n_directions: int = 100, n_grid: int = 50,
                        rng: np.random.Generator | None = None) -> float:
    """The smallest coverage over slabs ``{x : a <= v^T x <= b}`` holding at least a ``delta`` fraction of points.

    Directions ``v`` are drawn uniformly on the sphere (for one feature only ``v = 1`` is used);
    the slab ends run over a grid of ``n_grid`` empirical quantiles of ``v^T x``.
    """
    X = np.asarray(X, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    inside = np.asarray(inside, dtype=float).ravel()
    if len(X) != len(inside):
        raise ValueError(f"X and inside must have the same length, got {len(X)} and {len(inside)}")
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta}")
    rng = rng if rng is not None else np.random.default_rng(0)
    V = np.ones((1, 1)) if X.shape[1] == 1 else rng.normal(size=(n_directions, X.shape[1]))
    n, worst = len(X), 1.0
    qs = np.linspace(0, 1, n_grid + 1)
    for v in V:
        order = np.argsort(X @ v)
        cum = np.concatenate([[0.0], np.cumsum(inside[order])])
        ends = np.unique(np.round(qs * n).astype(int))
        a, b = np.meshgrid(ends, ends, indexing="ij")
        ok = (b - a) >= max(1, int(np.ceil(delta * n)))
        if not ok.any():
            continue
        cov = (cum[b[ok]] - cum[a[ok]]) / (b[ok] - a[ok])
        worst = min(worst, float(cov.min()))
    return worst
