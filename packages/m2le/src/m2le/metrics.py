"""Continual-learning metrics from an accuracy matrix."""

from __future__ import annotations

import numpy as np


def cl_metrics(acc_matrix, anytime=None) -> dict:
    """Final accuracy, average anytime accuracy (AAA), backward transfer, forgetting, plasticity.

    Args:
        acc_matrix: (T, T) with ``acc_matrix[i, j]`` the accuracy on task j after learning task i
            (entries with j > i are ignored).
        anytime: optional (T,) accuracy of each task's trained model *before* its merge (the
            adapter's own accuracy), for the post-merge plasticity drop.

    Returns:
        ``final_acc`` = mean_j A[T−1, j]; ``aaa`` = mean_i mean_{j ≤ i} A[i, j];
        ``bwt`` = mean_{j < T−1} (A[T−1, j] − A[j, j]); ``forgetting`` = mean_{j < T−1}
        (max_{i < T−1} A[i, j] − A[T−1, j]); ``plasticity`` = mean_j A[j, j] (post-merge accuracy on
        the task just learned); with ``anytime``: ``pre_merge_acc`` = mean_j anytime[j] and
        ``merge_drop`` = mean_j (anytime[j] − A[j, j]).
    """
    A = np.asarray(acc_matrix, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"acc_matrix must be square (T, T) with T >= 1, got shape {A.shape}")
    T = A.shape[0]
    low = A[np.tril_indices(T)]
    if not np.all(np.isfinite(low)) or low.min() < 0 or low.max() > 1:
        raise ValueError("acc_matrix entries (j <= i) must be accuracies in [0, 1]")
    out = {"final_acc": float(A[-1].mean()),
           "aaa": float(np.mean([A[i, :i + 1].mean() for i in range(T)])),
           "plasticity": float(np.mean(np.diag(A)))}
    if T > 1:
        out["bwt"] = float(np.mean([A[-1, j] - A[j, j] for j in range(T - 1)]))
        out["forgetting"] = float(np.mean([A[:T - 1, j][j:].max() - A[-1, j] for j in range(T - 1)]))
    else:
        out["bwt"] = out["forgetting"] = 0.0
    if anytime is not None:
        a = np.asarray(anytime, dtype=float)
        if a.shape != (T,):
            raise ValueError(f"anytime must have shape ({T},), got {a.shape}")
        out["pre_merge_acc"] = float(a.mean())
        out["merge_drop"] = float(np.mean(a - np.diag(A)))
    return out
