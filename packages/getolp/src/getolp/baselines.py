"""Baselines, as thin calls into POT: the standard O(M N²) LP and entropic (IBP) barycenters.

Every baseline returns ν on the grid; :func:`true_cost` scores any ν by its *unregularised*
barycenter cost ``Σ_m λ_m W_C(ν, μ_m)`` with exact OT (:func:`ot.emd2`).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import ot

from getolp.barycenter import (
    SolverError,
    _check_solver,
    check_grid_shape,
    check_histograms,
    check_weights,
    grid_coords,
    grid_cost_matrix,
)


def full_lp_barycenter(histograms, grid_shape, weights=None, cost="sqeuclidean", solver="highs", log=False,
                       *, coords=None, scale=False):
    """The standard fixed-support barycenter LP (:func:`ot.lp.barycenter`, ``M N² + N`` variables).

    The same HiGHS method as :func:`getolp.fixed_support_barycenter`, called as POT's users call it
    (HiGHS's default tolerances, the raw masses, POT's ``M − 1`` dependent rows kept): the faster
    and looser setting. ``scale=True`` hands POT the masses scaled to a mean entry of 1 and the
    costs to a largest entry of 1 and scales the objective back.
    Returns ν (shape ``grid_shape``) and, with ``log``, ``{"objective", "n_variables"}``.
    """
    shape = check_grid_shape(grid_shape)
    h = check_histograms(histograms, shape)
    w = check_weights(weights, h.shape[0])
    _check_solver(solver)
    C = grid_cost_matrix(shape, cost, coords)
    mass = float(h[0].sum())
    b_scale = h.shape[1] / mass if scale else 1.0
    c_scale = 1.0 / float(np.abs(C).max()) if scale and np.abs(C).max() > 0 else 1.0
    # POT's plans are indexed (input, barycenter) with cost M[j, k]; ours C[x_ν, y_μ]: pass Cᵀ.
    try:
        nu, sol = ot.lp.barycenter(h.T * b_scale, np.ascontiguousarray(C.T) * c_scale, w, solver=solver, log=True)
    except TypeError as e:  # POT indexes sol.x without checking the status
        raise SolverError(f"ot.lp.barycenter ({solver}) failed: {e}") from e
    if sol.status != 0:
        raise SolverError(f"ot.lp.barycenter ({solver}) did not solve the LP: status {sol.status}: {sol.message}")
    nu = np.clip(np.asarray(nu), 0.0, None).reshape(shape) / b_scale
    if log:
        return nu, {"objective": float(sol.fun) / (b_scale * c_scale), "n_variables": int(sol.x.size)}
    return nu


def full_lp_n_variables(grid_shape, n_histograms: int) -> int:
    """Variables of the standard LP as POT builds it: ``M N² + N``."""
    n = int(np.prod(check_grid_shape(grid_shape)))
    return int(n_histograms) * n * n + n


def entropic_barycenter(histograms, grid_shape, reg: float, weights=None, *, method="ibp",
                        num_iter_max: int = 2000, stop_thr: float = 1e-9, domain: str = "auto"):
    """Entropic barycenter of squared-Euclidean OT on the default ``[0, 1]^d`` grid.

    ``method="ibp"``: :func:`ot.bregman.barycenter` (iterative Bregman projections, dense ``N × N``
    kernel); ``method="convolutional"``: :func:`ot.bregman.convolutional_barycenter2d` (separable
    kernel; 2D grids only). ``domain="auto"``: plain Sinkhorn scalings, or the log domain where
    those under/overflow; ``"sinkhorn"`` / ``"sinkhorn_log"`` force one (the log domain is slower
    but stays accurate at small ``reg``). Returns ν normalised to the inputs' mass.
    """
    shape = check_grid_shape(grid_shape)
    h = check_histograms(histograms, shape)
    w = check_weights(weights, h.shape[0])
    if not reg > 0:
        raise ValueError(f"reg must be positive, got {reg}")
    mass = h[0].sum()
    if method not in ("ibp", "convolutional"):
        raise ValueError(f"method must be 'ibp' or 'convolutional', got {method!r}")
    if method == "convolutional" and len(shape) != 2:
        raise ValueError(f"method='convolutional' needs a 2D grid, got grid_shape={shape}")
    if domain not in ("auto", "sinkhorn", "sinkhorn_log"):
        raise ValueError(f"domain must be 'auto', 'sinkhorn' or 'sinkhorn_log', got {domain!r}")
    # the plain Sinkhorn kernels first (fast); the log domain if they under/overflow
    for dom in (("sinkhorn", "sinkhorn_log") if domain == "auto" else (domain,)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # non-convergence at the iteration cap is part of the result
            if method == "ibp":
                nu = ot.bregman.barycenter(h.T / mass, grid_cost_matrix(shape, "sqeuclidean"), reg, w, method=dom,
                                           numItermax=num_iter_max, stopThr=stop_thr)
            else:
                nu = ot.bregman.convolutional_barycenter2d(h.reshape(-1, *shape) / mass, reg, w, method=dom,
                                                           numItermax=num_iter_max, stopThr=stop_thr)
        nu = np.asarray(nu, dtype=float).reshape(shape)
        if np.all(np.isfinite(nu)) and nu.sum() > 0:
            nu = np.clip(nu, 0.0, None)
            return nu * (mass / nu.sum())
    raise SolverError(f"entropic barycenter ({method}, reg={reg}) diverged ({domain})")


def entropic_matched(histograms, grid_shape, target_cost: float, weights=None, *, rtol: float = 0.01,
                     regs=(1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4), method: str = "convolutional",
                     num_iter_max: int = 5000, stop_thr: float = 1e-9, time_budget_s: float | None = None,
                     log_domain_below: float = 2e-4) -> dict:
    """The entropic barycenter at matched accuracy: decrease ε until its true cost is within ``rtol``.

    Runs :func:`entropic_barycenter` for each ``reg`` in ``regs`` (decreasing) and scores each ν by
    its true cost (:func:`true_cost`); stops at the first whose cost is ≤ ``(1 + rtol)·target_cost``
    (the exact LP's optimum). Below ``log_domain_below`` the log-domain iterations are used (plain
    scalings lose accuracy there without overflowing). Returns ``{"reached", "reg", "excess", "seconds" (that ε's run),
    "search_seconds" (all runs), "tries": [{reg, excess, seconds}, ...], "nu"}``; ``reached=False``
    when no ε in ``regs`` (or within ``time_budget_s``) gets there: a censored result, never a guess.
    """
    shape = check_grid_shape(grid_shape)
    h = check_histograms(histograms, shape)
    w = check_weights(weights, h.shape[0])
    if not (isinstance(target_cost, (int, float)) and target_cost > 0):
        raise ValueError(f"target_cost must be a positive number, got {target_cost!r}")
    regs = [float(r) for r in regs]
    if not regs or any(r <= 0 for r in regs) or regs != sorted(regs, reverse=True):
        raise ValueError(f"regs must be positive and decreasing, got {regs}")
    C = grid_cost_matrix(shape)
    tries, t_all, nu = [], time.perf_counter(), None
    for reg in regs:
        if time_budget_s is not None and time.perf_counter() - t_all > time_budget_s:
            break
        t0 = time.perf_counter()
        try:
            nu = entropic_barycenter(h, shape, reg, w, method=method, num_iter_max=num_iter_max, stop_thr=stop_thr,
                                     domain="sinkhorn_log" if reg < log_domain_below else "auto")
        except SolverError:
            tries.append({"reg": reg, "excess": float("nan"), "seconds": time.perf_counter() - t0,
                          "domain": "sinkhorn_log" if reg < log_domain_below else "auto"})
            continue
        secs = time.perf_counter() - t0
        excess = true_cost(nu, h, shape, w, C=C) / target_cost - 1.0
        tries.append({"reg": reg, "excess": excess, "seconds": secs,
                      "domain": "sinkhorn_log" if reg < log_domain_below else "auto"})
        if excess <= rtol:
            return {"reached": True, "reg": reg, "excess": excess, "seconds": secs,
                    "search_seconds": time.perf_counter() - t_all, "tries": tries, "nu": nu}
    last = tries[-1] if tries else {"reg": float("nan"), "excess": float("nan"), "seconds": float("nan")}
    return {"reached": False, **last, "search_seconds": time.perf_counter() - t_all, "tries": tries, "nu": nu}


def pixel_mean(histograms, grid_shape, weights=None):
    """The Euclidean (L2) average Σ λ_m μ_m: the naive baseline of the averaging demo."""
    shape = check_grid_shape(grid_shape)
    h = check_histograms(histograms, shape)
    return (check_weights(weights, h.shape[0]) @ h).reshape(shape)


def true_cost(nu, histograms, grid_shape, weights=None, cost="sqeuclidean", *, coords=None, C=None) -> float:
    """``Σ_m λ_m W_C(ν, μ_m)`` by exact OT (:func:`ot.emd2`), ν rescaled to the inputs' mass."""
    shape = check_grid_shape(grid_shape)
    h = check_histograms(histograms, shape)
    w = check_weights(weights, h.shape[0])
    nu = np.asarray(nu, dtype=float).ravel()
    if nu.shape != (h.shape[1],) or np.any(nu < 0) or nu.sum() <= 0:
        raise ValueError(f"nu must be a non-negative histogram on the grid {shape}")
    nu = nu * (h[0].sum() / nu.sum())
    C = grid_cost_matrix(shape, cost, coords) if C is None else C
    return float(sum(wm * ot.emd2(nu, hm, C, numItermax=10_000_000) for wm, hm in zip(w, h) if wm > 0))


__all__ = ["entropic_barycenter", "entropic_matched", "full_lp_barycenter", "full_lp_n_variables", "grid_coords", "pixel_mean",
           "true_cost"]
