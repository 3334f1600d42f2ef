"""Data: the theory regime's subspace tasks with controlled overlap ρ, and permuted digits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Task:
    """One classification task: train / held-out (calibration) / test splits."""

    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def overlapping_subspaces(rng: np.random.Generator, d: int, k: int, T: int, rho: float) -> list[np.ndarray]:
    """T + 1 orthonormal bases (d, k): S₀ (pretraining) and S₁..S_T, pairwise overlap ρ.

    S_t = span(√(1−ρ)·Q_t + √ρ·Q_c) with Q_0..Q_T, Q_c mutually orthogonal orthonormal blocks, so
    the principal cosines between any two of the subspaces all equal ρ (ρ = 0: exactly orthogonal).
    """
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must be in [0, 1), got {rho}")
    if (T + 2) * k > d:
        raise ValueError(f"need (T + 2)·k ≤ d, got T={T}, k={k}, d={d}")
    Q, _ = np.linalg.qr(rng.standard_normal((d, (T + 2) * k)))
    Qc = Q[:, -k:]
    return [np.sqrt(1 - rho) * Q[:, t * k:(t + 1) * k] + np.sqrt(rho) * Qc for t in range(T + 1)]


def subspace_task(rng: np.random.Generator, U: np.ndarray, *, n_classes: int, n: int, separation: float,
                  noise: float = 1.0, n_val: int | None = None, n_test: int = 1000) -> Task:
    """Gaussian classes inside span(U): x = U(μ_y + σz), z ~ N(0, I_k).

    The class means are ``separation`` · (orthonormal vectors of a random rotation of R^k), so every
    pair of classes is equally hard; ``separation`` sets the task's difficulty (its margin).
    """
    k = U.shape[1]
    if n_classes > k:
        raise ValueError(f"n_classes ({n_classes}) must be ≤ the subspace dimension ({k})")
    R, _ = np.linalg.qr(rng.standard_normal((k, k)))
    mu = separation * R[:, :n_classes].T  # (C, k)

    def draw(m):
        y = np.arange(m) % n_classes
        rng.shuffle(y)
        Z = mu[y] + noise * rng.standard_normal((m, k))
        return Z @ U.T, y

    X, y = draw(n)
    Xv, yv = draw(n if n_val is None else n_val)
    Xt, yt = draw(n_test)
    return Task(X, y, Xv, yv, Xt, yt)


def theory_tasks(seed: int, *, d: int, k: int, T: int, rho: float, n_classes: int, n: int, separations,
                 pt_separation: float, noise: float, n_test: int = 1000) -> tuple[Task, list[Task]]:
    """The PT task on S₀ and T FT tasks on S₁..S_T (same seed → same subspaces for every ρ draw)."""
    rng = np.random.default_rng(seed)
    Us = overlapping_subspaces(rng, d, k, T, rho)
    pt = subspace_task(rng, Us[0], n_classes=n_classes, n=n, separation=pt_separation, noise=noise, n_test=n_test)
    fts = [subspace_task(rng, Us[t + 1], n_classes=n_classes, n=n, separation=float(separations[t]), noise=noise,
                         n_test=n_test) for t in range(T)]
    return pt, fts


def permuted_digits(seed: int, T: int, *, n_val: int = 300) -> tuple[Task, list[Task]]:
    """scikit-learn's digits (standardised) as the base task and T fixed pixel permutations of it.

    Each task uses the same train / held-out / test split of the 1,797 images (held-out and test of
    ``n_val`` images each); a permutation makes the inputs of the tasks nearly orthogonal.
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(0)) / (X.std(0) + 1e-8)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))
    te, va, tr = idx[:n_val], idx[n_val:2 * n_val], idx[2 * n_val:]

    def task(P):
        Z = X[:, P]
        return Task(Z[tr], y[tr], Z[va], y[va], Z[te], y[te])

    base = task(np.arange(X.shape[1]))
    return base, [task(rng.permutation(X.shape[1])) for _ in range(T)]
