"""The merging baselines, on dense updates ΔW_t (any shape, one tensor per task).

Uniform averaging (α = 1/T), sum (α = 1), task arithmetic (one scale), TIES and DARE (PEFT's
``peft.utils.merge_utils``), and KnOTS-lite: the updates are written in the shared SVD basis of their
concatenation, [ΔW_1 … ΔW_T] = UΣ[V_1ᵀ … V_Tᵀ], TIES merges the per-task coordinates V_t, and the
merge is UΣV_mergedᵀ (after Stoica et al., KnOTS, ICLR 2025; a lite version of our own).

:func:`tune` picks a baseline's hyper-parameters on a grid by a score computed on the held-out
(calibration) split only — the split MaLoRA calibrates on; no rule ever sees test data.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import torch

SCALES = (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0)
DENSITIES = (0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0)


def _stack(deltas) -> list[torch.Tensor]:
    return [torch.as_tensor(np.asarray(D, dtype=np.float64)) if not torch.is_tensor(D) else D.double() for D in deltas]


def _weights(T: int, scale: float) -> torch.Tensor:
    return torch.full((T,), float(scale), dtype=torch.float64)


def task_arithmetic(deltas, scale: float) -> np.ndarray:
    """scale · Σ_t ΔW_t (uniform averaging: scale = 1/T; sum: scale = 1)."""
    return float(scale) * sum(np.asarray(D, dtype=float) for D in deltas)


def ties(deltas, scale: float, density: float) -> np.ndarray:
    """TIES-merging (trim to ``density`` by magnitude, elect signs, disjoint mean), weights = scale."""
    from peft.utils.merge_utils import ties as _ties

    D = _stack(deltas)
    return _ties(D, _weights(len(D), scale), density).numpy()


def dare(deltas, scale: float, density: float, seed: int = 0) -> np.ndarray:
    """DARE (drop with probability 1 − density, rescale by 1/density) then a weighted sum (``dare_linear``)."""
    from peft.utils.merge_utils import dare_linear

    D = _stack(deltas)
    torch.manual_seed(seed)
    return dare_linear(D, _weights(len(D), scale), density).numpy()


def knots_lite(deltas, scale: float, density: float) -> np.ndarray:
    """TIES on each update's coordinates in the shared SVD basis of the concatenated updates."""
    from peft.utils.merge_utils import ties as _ties

    D = [np.asarray(x, dtype=float) for x in deltas]
    shape = D[0].shape
    M = [x.reshape(shape[0], -1) for x in D]
    U, s, Vt = np.linalg.svd(np.concatenate(M, axis=1), full_matrices=False)
    k = int(np.sum(s > 1e-12 * s[0]))
    U, s, Vt = U[:, :k], s[:k], Vt[:k]
    n = M[0].shape[1]
    Vs = [torch.as_tensor(Vt[:, t * n:(t + 1) * n]) for t in range(len(D))]  # task t: UΣ V_t
    Vm = _ties(Vs, _weights(len(D), scale), density).numpy()
    return ((U * s) @ Vm).reshape(shape)


BASELINES: dict[str, tuple[Callable, dict]] = {
    "uniform": (lambda D: task_arithmetic(D, 1.0 / len(D)), {}),
    "sum": (lambda D: task_arithmetic(D, 1.0), {}),
    "task_arithmetic": (task_arithmetic, {"scale": SCALES}),
    "ties": (ties, {"scale": SCALES, "density": DENSITIES}),
    "dare": (dare, {"scale": SCALES, "density": DENSITIES}),
    "knots_lite": (knots_lite, {"scale": SCALES, "density": DENSITIES}),
}


def tune(name: str, deltas: Sequence, score: Callable[[np.ndarray], float], *, seed: int = 0,
         grid: dict | None = None) -> tuple[np.ndarray, dict]:
    """The merged update of baseline ``name`` at the grid point with the highest held-out ``score``.

    ``score(delta) -> float`` sees only the held-out split. When the best scale sits on the grid's
    edge the scale grid is extended (×3 beyond the edge, twice) so the optimum is bracketed.
    Returns ``(merged delta, {"params": ..., "score": ..., "edge": bool})``.
    """
    fn, default = BASELINES[name]
    grid = dict(default if grid is None else grid)
    if not grid:
        m = fn(deltas)
        return m, {"params": {}, "score": float(score(m)), "edge": False}
    kw = {"seed": seed} if name == "dare" else {}
    with warnings.catch_warnings():  # PEFT warns that density 1 prunes nothing: that is the grid's point
        warnings.simplefilter("ignore")
        return _tune(fn, grid, deltas, score, kw)


def _tune(fn, grid, deltas, score, kw):
    for _ in range(3):
        keys = list(grid)
        best, best_s = None, -np.inf
        for vals in itertools.product(*(grid[k] for k in keys)):
            params = dict(zip(keys, vals))
            s = float(score(fn(deltas, **params, **kw)))
            if s > best_s:
                best, best_s = params, s
        scales = list(grid.get("scale", ()))
        edge = bool(scales) and best["scale"] in (scales[0], scales[-1]) and len(scales) > 1
        if not edge:
            break
        grid["scale"] = ([scales[0] / 3, scales[0] / 9] + scales) if best["scale"] == scales[0] else (
            scales + [scales[-1] * 3, scales[-1] * 9])
        grid["scale"] = sorted(grid["scale"])
    return fn(deltas, **best, **kw), {"params": best, "score": best_s, "edge": edge}
