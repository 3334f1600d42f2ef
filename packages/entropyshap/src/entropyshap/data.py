"""Generators: the linear-Gaussian design (exact ground truth) and the learned-model case.

Linear-Gaussian: ``X ~ N(0, I_p)``, ``Y = W X + ε``, ``ε ~ N(0, Σ_ε)``, ``W`` of shape ``(d, p)``.
Feature x1 loads on the shared direction of Y1 and Y2 (it carries the cross term), x2 on Y1 only,
the last feature is null, the others load randomly on every output.

Learned case (d = 2, p = 4): ``σ_1 = exp(x1 / 2)``, ``σ_2 = exp(x2 / 2)``, ``ρ = tanh(x3)`` (x3 sets
only the correlation), x4 is noise; ``Y | x ~ N(0, Σ(x))``.
"""

from __future__ import annotations

import numpy as np

from paperworks.utils import check_int


def linear_design(p: int, d: int, rng: np.random.Generator, *, shared: float = 1.0, own: float = 1.0,
                  other: float = 0.5, noise: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """``(W (d, p), Σ_ε (d, d))`` of the brief's design (needs p ≥ 3, d ≥ 2)."""
    p = check_int(p, "p", minimum=3)
    d = check_int(d, "d", minimum=2)
    W = np.zeros((d, p))
    W[0, 0] = W[1, 0] = shared
    W[0, 1] = own
    W[:, 2:p - 1] = other * rng.standard_normal((d, p - 3))
    return W, noise * np.eye(d)


def true_covariance(X: np.ndarray) -> np.ndarray:
    """The learned case's true ``Σ(x)`` ``(n, 2, 2)``."""
    X = np.asarray(X, dtype=float)
    s1, s2, rho = np.exp(0.5 * X[:, 0]), np.exp(0.5 * X[:, 1]), np.tanh(X[:, 2])
    cov = np.empty((len(X), 2, 2))
    cov[:, 0, 0], cov[:, 1, 1] = s1 ** 2, s2 ** 2
    cov[:, 0, 1] = cov[:, 1, 0] = rho * s1 * s2
    return cov


def oracle(X):
    """The learned case's true predictive distribution as ``X → (mean, cov)``."""
    X = np.asarray(X, dtype=float)
    return np.zeros((len(X), 2)), true_covariance(X)


def learned_case(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(X (n, 4), Y (n, 2))`` drawn from the learned case."""
    n = check_int(n, "n")
    X = rng.standard_normal((n, 4))
    L = np.linalg.cholesky(true_covariance(X))
    return X, np.einsum("nij,nj->ni", L, rng.standard_normal((n, 2)))


__all__ = ["linear_design", "learned_case", "oracle", "true_covariance"]
