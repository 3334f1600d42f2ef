"""Data: class-conditional Gaussians with a planted task margin, and the digits class-IL stream."""

from __future__ import annotations

import numpy as np

from paperworks.utils import check_float, check_int


def gaussian_tasks(rng: np.random.Generator, *, gamma: float, n_tasks: int = 5, classes_per_task: int = 2,
                   d: int = 32, within: float = 3.0, n_per_class: int = 200, cov_seed: int = 0) -> dict:
    """Class-conditional Gaussians with a shared covariance Σ (the exact LDA regime).

    In whitened coordinates the task centroids are √(γ/2)·e_t, so every pair of task centroids is at
    squared Mahalanobis distance exactly ``gamma`` (γ_min = γ, task reading); the classes of a task sit at
    the centroid ± ``within``/2 along an axis of their own (orthogonal to every centroid axis), so the
    two classes of a task are at Mahalanobis distance ``within`` and the cross-task class-pair γ is
    γ + within²/2 (two classes per task).
    Σ = AAᵀ with A random (condition number ≈ 10), fixed by ``cov_seed``.

    Returns:
        dict with ``sample(n_per_class) -> (X, y)``, ``task_of_class``, ``gamma_class`` (analytic
        cross-task class-pair γ), ``gamma_task``.
    """
    check_float(gamma, "gamma", minimum=0)
    n_tasks = check_int(n_tasks, "n_tasks", minimum=2)
    cpt = check_int(classes_per_task, "classes_per_task", minimum=2)
    d = check_int(d, "d", minimum=n_tasks + n_tasks * (cpt - 1))
    crng = np.random.default_rng(cov_seed)
    Q, _ = np.linalg.qr(crng.standard_normal((d, d)))
    A = Q @ np.diag(np.sqrt(np.linspace(1.0, 10.0, d)))
    means_w = []
    for t in range(n_tasks):
        c = np.zeros(d)
        c[t] = np.sqrt(gamma / 2)
        for j in range(cpt):  # class offsets in the span of the non-centroid axes of task t
            u = np.zeros(d)
            base = n_tasks + t * (cpt - 1)
            if cpt == 2:
                u[base] = 1.0 if j == 0 else -1.0
            else:
                u[base: base + cpt - 1] = np.eye(cpt)[j][: cpt - 1] - 1.0 / cpt
                u /= np.linalg.norm(u)
            means_w.append(c + within / 2 * u)
    means_w = np.asarray(means_w)
    means = means_w @ A.T
    K = len(means)
    task_of = np.repeat(np.arange(n_tasks), cpt)
    Dw = ((means_w[:, None] - means_w[None]) ** 2).sum(-1)
    gamma_class = float(np.min(Dw[task_of[:, None] != task_of[None, :]]))

    def sample(n=n_per_class):
        n = check_int(n, "n_per_class")
        Z = rng.standard_normal((K * n, d))
        y = np.repeat(np.arange(K), n)
        return Z @ A.T + means[y], y

    return {"sample": sample, "task_of_class": task_of, "gamma_task": float(gamma), "gamma_class": gamma_class,
            "means": means, "cov": A @ A.T}


def split_tasks(X, y, task_of_class):
    """Split (X, y) into the per-task list [(X_t, y_t), ...] in task order."""
    task_of_class = np.asarray(task_of_class)
    tasks = task_of_class[y]
    return [(X[tasks == t], y[tasks == t]) for t in range(int(task_of_class.max()) + 1)]


def digits_splits(seed: int, *, fractions=(0.25, 0.35, 0.2, 0.2), n_tasks: int = 5) -> dict:
    """scikit-learn's digits (pixels / 16), stratified into pretrain / train / gamma / test splits.

    The class order is shuffled by ``seed`` and cut into ``n_tasks`` tasks of 10/n_tasks classes.
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(seed)
    names = ("pretrain", "train", "gamma", "test")
    parts = {k: [] for k in names}
    cuts = np.cumsum(fractions)[:-1]
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        for k, chunk in zip(names, np.split(idx, (cuts * idx.size).astype(int))):
            parts[k].append(chunk)
    order = rng.permutation(10)
    task_of = np.empty(10, int)
    task_of[order] = np.repeat(np.arange(n_tasks), 10 // n_tasks)
    out = {k: (X[np.concatenate(v)], y[np.concatenate(v)]) for k, v in parts.items()}
    out["task_of_class"] = task_of
    return out
