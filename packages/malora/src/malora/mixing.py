"""MaLoRA's mixing coefficients: maximise the union's minimum normalised margin of W₀ + Σ_t α_t ΔW_t.

For a linear head the pair margins of the merge are affine in α,
m_ic(α) = (w⁰_y − w⁰_c)ᵀx_i + Σ_t α_t (δ^t_y − δ^t_c)ᵀx_i, and its Frobenius norm is the Euclidean
norm ‖R(1, α)‖ with RᵀR the Gram matrix of (W₀, ΔW_1, …, ΔW_T). So the normalised min-margin
γ(α) = min_ic m_ic(α) / ‖R(1, α)‖ is quasi-concave on {γ > 0} and α* = argmax_{α≥0} γ(α) is found by
bisection on γ over the convex feasibility problems

    find α ∈ [0, α_max]^T, τ  with  m_ic(α) ≥ γ·τ  ∀ i, c  and  ‖R(1, α)‖ ≤ τ      (cvxpy, Clarabel).

Under exact orthogonality (every task's inputs orthogonal to W₀'s rows and to the other adapters'
rows, the adapters mutually orthogonal) task t's margin is α_t q_t / ‖W(α)‖ with q_t its raw
min-margin under its own adapter, and the optimum equalises α_t q_t (derived here): with base data of
raw margin q₀, α_t = q₀ / q_t; without it the objective grows without bound along α_t ∝ 1/q_t, so α is
capped (``alpha_max``, default 100) and the largest α_t equals the cap (``log["capped"]``).
"""

from __future__ import annotations

import warnings

import numpy as np

from malora.margins import as_matrix, check_data, raw_pair_margins
from paperworks import check_float

DEFAULT_ALPHA_MAX = 100.0


# inputs ---------------------------------------------------------------------------------------------


def as_delta(delta, shape: tuple[int, int], name: str) -> np.ndarray:
    """A dense (C, d) update from an array/tensor or a LoRA factor pair ``(B, A)`` (ΔW = B A)."""
    if isinstance(delta, (tuple, list)):
        if len(delta) != 2:
            raise ValueError(f"{name}: a factor pair must be (B, A), got {len(delta)} items")
        B, A = as_matrix(delta[0], f"{name} B"), as_matrix(delta[1], f"{name} A")
        if B.shape[1] != A.shape[0]:
            raise ValueError(f"{name}: B {B.shape} and A {A.shape} do not multiply")
        delta = B @ A
    else:
        delta = as_matrix(delta, name)
    if delta.shape != tuple(shape):
        raise ValueError(f"{name} has shape {delta.shape}, the base weight has {tuple(shape)}")
    return delta


def _deltas(base_weight, deltas) -> tuple[np.ndarray, list[np.ndarray]]:
    W0 = as_matrix(base_weight, "base_weight")
    if W0.shape[0] < 2:
        raise ValueError(f"base_weight must have at least 2 classes (rows), got shape {W0.shape}")
    if isinstance(deltas, np.ndarray) and deltas.ndim == 3:
        deltas = list(deltas)
    if not isinstance(deltas, (list, tuple)) or len(deltas) == 0:
        raise ValueError("deltas must be a non-empty list of (C, d) updates or (B, A) factor pairs")
    return W0, [as_delta(D, W0.shape, f"deltas[{t}]") for t, D in enumerate(deltas)]


def merge(base_weight, deltas, alpha):
    """The merged weight W₀ + Σ_t α_t ΔW_t (a torch tensor when ``base_weight`` is one, else numpy)."""
    W0, D = _deltas(base_weight, deltas)
    a = _alpha(alpha, len(D))
    W = W0 + sum(at * Dt for at, Dt in zip(a, D))
    if hasattr(base_weight, "detach"):
        import torch

        return torch.as_tensor(W, dtype=base_weight.dtype, device=base_weight.device)
    return W


def _alpha(alpha, T: int) -> np.ndarray:
    a = as_matrix(np.atleast_1d(alpha) if not hasattr(alpha, "detach") else alpha.reshape(-1), "alpha", ndim=1)
    if a.shape != (T,):
        raise ValueError(f"alpha must have shape ({T},), got {a.shape}")
    return a


# the program -------------------------------------------------------------------------------------------


def gram_root(mats: list[np.ndarray]) -> np.ndarray:
    """R with ‖Σ_k β_k M_k‖_F = ‖R β‖ (R upper-triangular from a QR of the stacked vectorised M_k)."""
    F = np.stack([M.reshape(-1) for M in mats], axis=1)
    return np.linalg.qr(F, mode="r")


def _pairs(W0, D, data) -> tuple[np.ndarray, np.ndarray]:
    """Constant and α-coefficients of every pair margin: (P,), (P, T)."""
    a = np.concatenate([raw_pair_margins(W0, X, y).reshape(-1) for X, y in data])
    B = np.stack([np.concatenate([raw_pair_margins(Dt, X, y).reshape(-1) for X, y in data]) for Dt in D], axis=1)
    return a, B


def solve_program(a: np.ndarray, B: np.ndarray, R: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
                  tol: float = 1e-6, how: str = "bisection", max_bisect: int = 60) -> tuple[np.ndarray, float, bool]:
    """max_{lo ≤ α ≤ hi} min_p (a_p + B_p α) / ‖R(1, α)‖.

    ``how="bisection"``: bisection on γ over the convex feasibility problems
    {m(α) ≥ γτ, ‖R(1, α)‖ ≤ τ} (cvxpy, Clarabel). ``how="homogeneous"``: the same optimum in one
    second-order cone program — the ratio is invariant to scaling (1, α) jointly, so with
    β = β₀(1, α): max t s.t. aβ₀ + Bα′ ≥ t, ‖R(β₀, α′)‖ ≤ 1, β₀·lo ≤ α′ ≤ β₀·hi, and α = α′/β₀
    (exact whenever the optimum is positive; used inside the linearisation loop, where speed counts).

    Returns ``(α, γ, positive)``. When no α in the box has a positive margin on every pair
    (``positive=False``) it returns instead the α maximising the raw min-margin under the norm budget
    ‖R(1, α)‖ ≤ the largest norm among the box's centre, corners ``lo``/``hi`` and α = 1 (one
    LP + SOC; a documented fallback).
    """
    import cvxpy as cp

    if how not in ("bisection", "homogeneous"):
        raise ValueError(f"how must be 'bisection' or 'homogeneous', got {how!r}")
    T = B.shape[1]

    def value(x):
        return float(np.min(a + B @ x) / np.linalg.norm(R @ np.concatenate([[1.0], x])))

    def solve(prob) -> bool:
        try:
            with warnings.catch_warnings():  # "may be inaccurate": judged by the status
                warnings.simplefilter("ignore")
                prob.solve(solver=cp.CLARABEL)
        except cp.error.SolverError:
            return False
        return prob.status in ("optimal", "optimal_inaccurate")

    starts = [np.clip(v, lo, hi) for v in ((lo + hi) / 2, lo, hi, np.ones(T))]
    best = max(starts, key=value)
    alpha = cp.Variable(T)
    beta = cp.hstack([np.ones(1), alpha])

    def fallback():
        budget = max(np.linalg.norm(R @ np.concatenate([[1.0], v])) for v in starts)
        t = cp.Variable()
        ok = solve(cp.Problem(cp.Maximize(t), [a + B @ alpha >= t, alpha >= lo, alpha <= hi,
                                               cp.norm(R @ beta) <= budget]))
        x = np.clip(alpha.value, lo, hi) if ok and alpha.value is not None else best
        return x, value(x), False

    if how == "homogeneous":
        b0, ap, t = cp.Variable(nonneg=True), cp.Variable(T), cp.Variable()
        ok = solve(cp.Problem(cp.Maximize(t), [a * b0 + B @ ap >= t, cp.norm(R @ cp.hstack([b0, ap])) <= 1,
                                               ap >= b0 * lo, ap <= b0 * hi]))
        if not ok or t.value is None or t.value <= 0 or b0.value is None or b0.value <= 0:
            return fallback() if value(best) <= 0 else (best, value(best), True)
        x = np.clip(ap.value / b0.value, lo, hi)
        x = x if value(x) >= value(best) else best
        return x, value(x), True

    tau = cp.Variable()
    g = cp.Parameter(nonneg=True)
    feas = cp.Problem(cp.Minimize(0), [a + B @ alpha >= g * tau, alpha >= lo, alpha <= hi, cp.norm(R @ beta) <= tau])

    def feasible(gv: float) -> bool:
        g.value = gv
        return solve(feas) and alpha.value is not None

    g_lo = value(best)
    if g_lo <= 0:
        if not feasible(0.0):
            return fallback()
        best = np.clip(alpha.value, lo, hi)
        g_lo = max(value(best), 0.0)
    gamma_hi = g_lo + 1.0
    while feasible(gamma_hi):  # grow the bracket until infeasible
        x = np.clip(alpha.value, lo, hi)
        g_lo = gamma_hi
        if value(x) > value(best):
            best = x
        gamma_hi *= 2
    for _ in range(max_bisect):
        if gamma_hi - g_lo <= tol * max(abs(gamma_hi), 1e-12):
            break
        mid = 0.5 * (g_lo + gamma_hi)
        if feasible(mid):
            g_lo = mid
            x = np.clip(alpha.value, lo, hi)
            if value(x) > value(best):
                best = x
        else:
            gamma_hi = mid
    return best, value(best), True


def _orthogonal(W0, D, data, rtol: float = 1e-8) -> bool:
    """Exact-orthogonality regime: adapters mutually orthogonal, ⟨W₀, ΔW_t⟩ = 0, and on every task's
    inputs only that task's adapter acts (W₀x = 0 and ΔW_s x = 0 for s ≠ t)."""
    scale = max(np.linalg.norm(W0), *(np.linalg.norm(Dt) for Dt in D))
    for s, Ds in enumerate(D):
        if abs(np.sum(W0 * Ds)) > rtol * scale**2:
            return False
        for t in range(s + 1, len(D)):
            if abs(np.sum(Ds * D[t])) > rtol * scale**2:
                return False
    for t, (X, _) in enumerate(data):
        xs = max(np.linalg.norm(X, axis=1).max(), 1e-300)
        for s, M in enumerate([W0, *D]):
            if s - 1 != t and np.abs(X @ M.T).max() > rtol * scale * xs:
                return False
    return True


def mixing_coefficients(base_weight, deltas, datasets, *, base_data=None, method: str = "auto", log: bool = False,
                        alpha_max: float = DEFAULT_ALPHA_MAX, tol: float = 1e-6, solver: str = "bisection",
                        names=None):
    r"""MaLoRA: the mixing coefficients maximising the minimum normalised margin over the tasks' union.

    .. math:: \alpha^* = \arg\max_{\alpha \ge 0} \min_{t,\,i \in D_t}
              \frac{(w_{y_i} - \max_{c\ne y_i} w_c)^\top x_i}{\lVert W\rVert_F},
              \qquad W = W_0 + \sum_t \alpha_t \Delta W_t

    Args:
        base_weight: (C, d) pretrained head W₀ (numpy or torch).
        deltas: T updates, each a dense (C, d) array/tensor or a LoRA factor pair ``(B, A)``.
        datasets: T calibration sets ``(X_t, y_t)``, task t's inputs (n_t, d) and labels in [0, C).
        base_data: optional ``(X, y)`` of the pretraining task, kept in the union (retention).
        method: ``"closed_form"`` (exact orthogonality: equalise α_t q_t), ``"program"`` (bisection
            over convex feasibility problems, cvxpy), or ``"auto"`` (closed form when the regime is
            exactly orthogonal, else the program).
        log: also return ``{"min_margin", "task_margins", "method", "capped", "positive"}``.
        alpha_max: the cap on every α_t (default 100): without ``base_data`` and a base that adds
            nothing to the tasks' margins the optimum is unbounded (α → ∞); it is capped, and
            ``log["capped"]`` says whether a coefficient sits on the cap.
        tol: relative tolerance of the bisection on γ.
        solver: how ``"program"`` is solved: ``"bisection"`` (default; feasibility problems) or
            ``"homogeneous"`` (the same optimum as one second-order cone program, see
            :func:`solve_program`).
        names: task names for error messages (default ``task 0``, ``task 1``, ...).

    Returns:
        α (T,), and the diagnostics dict when ``log=True``.

    Raises:
        ValueError: deltas not shaped like W₀, labels outside the head, an empty calibration set,
            NaN/inf weights or data, or a task with no positive margin under its own adapter (named).

    Example:
        >>> alpha = mixing_coefficients(W0, [dW1, dW2], [(X1, y1), (X2, y2)])  # doctest: +SKIP
    """
    if method not in ("auto", "closed_form", "program"):
        raise ValueError(f"method must be 'auto', 'closed_form' or 'program', got {method!r}")
    if solver not in ("bisection", "homogeneous"):
        raise ValueError(f"solver must be 'bisection' or 'homogeneous', got {solver!r}")
    alpha_max = check_float(alpha_max, "alpha_max", minimum=0.0, open_minimum=True)
    tol = check_float(tol, "tol", minimum=0.0, open_minimum=True)
    W0, D = _deltas(base_weight, deltas)
    T = len(D)
    names = [f"task {t}" for t in range(T)] if names is None else [str(n) for n in names]
    if not isinstance(datasets, (list, tuple)) or len(datasets) != T:
        raise ValueError(f"datasets must be a list of {T} (X, y) pairs, one per delta")
    C, d = W0.shape
    data = [check_data(*_pair(ds, names[t]), C, d, f"calibration data of {names[t]}") for t, ds in enumerate(datasets)]
    for t in range(T):  # each task must be separated by its own adapter
        q = raw_pair_margins(W0 + D[t], *data[t]).min()
        if q <= 0:
            raise ValueError(f"{names[t]} has no positive margin under its own adapter (min raw margin {q:.3g}); "
                             "its calibration data are not separated by W₀ + ΔW_t")
    union = list(data)
    if base_data is not None:
        union.append(check_data(*_pair(base_data, "base_data"), C, d, "base_data"))
    if method == "auto":
        method = "closed_form" if _orthogonal(W0, D, data) else "program"
    if method == "closed_form":
        q = np.array([raw_pair_margins(D[t], *data[t]).min() for t in range(T)])
        if base_data is not None:
            q0 = raw_pair_margins(W0, *union[-1]).min()
            if q0 <= 0:
                raise ValueError(f"base_data has no positive margin under W₀ (min raw margin {q0:.3g})")
            alpha = q0 / q
            alpha = alpha * min(1.0, alpha_max / alpha.max())
        else:
            alpha = alpha_max * q.min() / q
    else:
        a, B = _pairs(W0, D, union)
        R = gram_root([W0, *D])
        alpha, _, positive = solve_program(a, B, R, np.zeros(T), np.full(T, alpha_max), tol=tol, how=solver)
    W = W0 + sum(at * Dt for at, Dt in zip(alpha, D))
    nrm = np.linalg.norm(W)
    task_margins = [float(raw_pair_margins(W, *ds).min() / nrm) for ds in union]
    if not log:
        return alpha
    info = {"min_margin": float(min(task_margins)), "task_margins": task_margins, "method": method,
            "capped": bool(np.any(alpha >= alpha_max * (1 - 1e-3))), "positive": bool(min(task_margins) > 0)}
    return alpha, info


def _pair(ds, name):
    if not isinstance(ds, (tuple, list)) or len(ds) != 2:
        raise ValueError(f"the calibration data of {name} must be an (X, y) pair")
    return ds
