"""Kernels on residual vectors (RBF, Matérn, linear) and the automatic lengthscale.

All kernels act on rows of ``(n, d)`` arrays. The stationary kernels are normalised so that
``k(e, e) = 1``; :func:`kernel_at_zero` returns that value (``None`` for the linear kernel,
which has no finite limit at infinity).
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.spatial.distance import cdist, pdist

KERNELS = ("rbf", "matern", "linear")


def check_kernel(kernel: str, nu: float = 1.5) -> None:
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if isinstance(nu, bool) or not isinstance(nu, numbers.Real):
        raise TypeError(f"nu must be a real number, got {type(nu).__name__} {nu!r}")
    if kernel == "matern" and nu not in (0.5, 1.5, 2.5):
        raise ValueError(f"nu must be 0.5, 1.5 or 2.5 for the Matérn kernel, got {nu!r}")


def pairwise_kernel(A, B, *, kernel: str = "rbf", lengthscale: float = 1.0, nu: float = 1.5) -> np.ndarray:
    """The Gram matrix ``k(A_i, B_j)``, shape ``(len(A), len(B))``.

    - ``rbf``: ``exp(-|a-b|^2 / (2 l^2))``
    - ``matern``: Matérn with smoothness ``nu`` in {0.5, 1.5, 2.5} and lengthscale ``l``
    - ``linear``: ``a . b`` (``lengthscale`` unused)
    """
    check_kernel(kernel, nu)
    A = np.atleast_2d(np.asarray(A, dtype=float))
    B = np.atleast_2d(np.asarray(B, dtype=float))
    if kernel == "linear":
        return A @ B.T
    if kernel == "rbf":
        K = cdist(A, B, "sqeuclidean")
        K *= -1.0 / (2.0 * lengthscale**2)
        return np.exp(K, out=K)
    s = cdist(A, B)
    nu = float(nu)
    s *= {0.5: 1.0, 1.5: np.sqrt(3.0), 2.5: np.sqrt(5.0)}[nu] / lengthscale
    if nu == 0.5:
        return np.exp(-s, out=s)
    poly = 1.0 + s if nu == 1.5 else 1.0 + s + s**2 / 3.0
    np.exp(-s, out=s)
    poly *= s
    return poly


def kernel_diag(A, *, kernel: str = "rbf") -> np.ndarray:
    """``k(A_i, A_i)`` for each row."""
    A = np.atleast_2d(np.asarray(A, dtype=float))
    if kernel == "linear":
        return np.einsum("ij,ij->i", A, A)
    return np.ones(len(A))


def kernel_at_zero(kernel: str) -> float | None:
    """``k(e, e)`` of a stationary kernel (1), or ``None`` for the linear kernel."""
    return None if kernel == "linear" else 1.0


def auto_lengthscale(E, *, max_points: int = 2000, rng: np.random.Generator | None = None) -> float:
    """The median pairwise distance of the rows of ``E`` times ``d / 2``.

    This is the rule of the official code (``meyerlouis/mvcp``); the factor ``d/2`` widens the
    kernel as the output dimension grows. At most ``max_points`` rows are used.
    """
    E = np.asarray(E, dtype=float)
    if len(E) > max_points:
        rng = rng if rng is not None else np.random.default_rng(0)
        E = E[rng.choice(len(E), max_points, replace=False)]
    med = float(np.median(pdist(E)))
    if not med > 0:
        raise ValueError("the residuals are all identical: cannot choose a lengthscale")
    return med * E.shape[1] / 2.0
