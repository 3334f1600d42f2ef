"""Baselines: scalar reductions attributed with shap, the averaged-entropy shortcut (the trap), and
shapiq's ``ExactComputer`` as the reference enumerator.

- :func:`trace_shap` / :func:`mean_shap` — SHAP (``shap.explainers.Exact``, independent masker on the
  same background) of the trace of the predicted covariance, and of the predicted mean.
- Component-wise (Watson et al. 2023 style) is ``Σ_j φ_marg,j`` from the marginal game G1.
- :func:`averaged_entropy_shapley` — removes features by averaging the components' Gaussian entropies
  (``mode="entropy"``) or their parameters (``mode="params"``) instead of taking the mixture's entropy:
  a different quantity, kept to show that it differs.
- :func:`shapiq_exact` — ``shapiq.ExactComputer`` on one game.
"""

from __future__ import annotations

import numpy as np

from entropyshap.entropy import gaussian_columns
from entropyshap.shapley import coalition_matrix


def _removal_shapley(background, X, table_of) -> np.ndarray:
    """Shapley values per row ``x`` of ``X`` of the game whose ``2^p`` values ``table_of(Z)`` computes from
    ``Z`` ``(2^p, K, p)``: ``x`` on each coalition's features, the ``K`` background rows elsewhere."""
    from entropyshap.shapley import shapley_from_table

    B = np.asarray(background, dtype=float)
    X = np.atleast_2d(np.asarray(X, dtype=float))
    p = B.shape[1]
    C = coalition_matrix(np.arange(2 ** p), p)
    return np.stack([shapley_from_table(table_of(np.where(C[:, None, :], x, B[None])), p) for x in X])


def interventional_shap(f, background, X) -> np.ndarray:
    """Exact interventional SHAP of ``f`` (``(n, p)`` or ``(n, p, k)``): ``v(S) = mean_b f(x_S, b_{−S})``.

    The quantity ``shap.explainers.Exact`` computes with an independent masker on the same background,
    without shap's numba compilation (seconds per process); equal to it to float precision (tested).
    """
    def table_of(Z):
        v = np.asarray(f(Z.reshape(-1, Z.shape[-1])), dtype=float)
        return v.reshape(*Z.shape[:2], *v.shape[1:]).mean(1)

    return _removal_shapley(background, X, table_of)


def _shap_exact(f, background, X, engine: str) -> np.ndarray:
    if engine == "own":
        return interventional_shap(f, background, X)
    if engine != "shap":
        raise ValueError(f"engine must be 'shap' or 'own', got {engine!r}")
    import shap

    masker = shap.maskers.Independent(np.asarray(background, dtype=float), max_samples=len(background))
    ex = shap.explainers.Exact(f, masker)
    return np.asarray(ex(np.asarray(X, dtype=float)).values)


def trace_shap(predict, background, X, *, engine: str = "shap") -> np.ndarray:
    """SHAP values ``(n, p)`` of ``trace Σ(x)`` (the scalar-reduction baseline)."""
    return _shap_exact(lambda Z: np.trace(predict(Z)[1], axis1=1, axis2=2), background, X, engine)


def mean_shap(predict, background, X, *, engine: str = "shap") -> np.ndarray:
    """SHAP values ``(n, p, d)`` of the predicted mean ``μ(x)``."""
    return _shap_exact(lambda Z: predict(Z)[0], background, X, engine)


def averaged_entropy_shapley(predict, background, X, *, mode: str = "entropy") -> np.ndarray:
    """Shapley values ``(n, p, 2d + 2)`` of the wrong games: average entropies or parameters over removal.

    ``mode="entropy"``: ``v(S) = mean_k H(N(μ(x_S, b_k), Σ(x_S, b_k)))``; ``mode="params"``:
    ``v(S) = H(N(·, mean_k Σ(x_S, b_k)))``. Neither is the entropy of the mixture.
    """
    if mode not in ("entropy", "params"):
        raise ValueError(f"mode must be 'entropy' or 'params', got {mode!r}")

    def table_of(Z):
        _, cov = predict(Z.reshape(-1, Z.shape[-1]))
        cov = cov.reshape(*Z.shape[:2], *cov.shape[1:])
        return gaussian_columns(cov).mean(1) if mode == "entropy" else gaussian_columns(cov.mean(1))

    return _removal_shapley(background, X, table_of)


def shapiq_exact(value_fn, p: int) -> np.ndarray:
    """Shapley values ``(p,)`` of one game by ``shapiq.ExactComputer`` (the reference enumerator)."""
    from shapiq import ExactComputer

    iv = ExactComputer(value_fn, n_players=p)("SV")
    return np.array([iv[(i,)] for i in range(p)], dtype=float)


__all__ = ["interventional_shap", "trace_shap", "mean_shap", "averaged_entropy_shapley", "shapiq_exact"]
