"""Normalised multiclass margins, the hard-margin multiclass SVM and the closed-form margins vs λ.

Everything here is the theory regime of the paper: a linear C-way head ``W`` (C, d) on inputs
``x`` (d,), logits ``W x``. The closed forms below are **derived here** (no formulas of the paper
are public); the derivation is in the docstrings and the README, and the tests check each one
against brute force or an independent solver.
"""

from __future__ import annotations

import math

import numpy as np

# validation ----------------------------------------------------------------------------------------


def as_matrix(W, name: str, *, ndim: int = 2) -> np.ndarray:
    """A finite float64 numpy array from a numpy array or torch tensor (clear errors otherwise)."""
    if hasattr(W, "detach"):
        W = W.detach().cpu().double().numpy()
    if isinstance(W, (str, bytes)) or W is None:
        raise TypeError(f"{name} must be an array or tensor, got {type(W).__name__}")
    try:
        W = np.asarray(W, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be numeric, got {type(W).__name__}: {e}") from None
    if W.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError(f"{name} contains NaN or inf")
    return W


def as_labels(y, n: int, C: int, name: str = "y") -> np.ndarray:
    """Integer labels (n,) in [0, C)."""
    if hasattr(y, "detach"):
        y = y.detach().cpu().numpy()
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {y.shape}")
    if y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(int)
        else:
            raise TypeError(f"{name} must hold integer class labels, got dtype {y.dtype}")
    if n and (y.min() < 0 or y.max() >= C):
        raise ValueError(f"{name} has labels outside the head's {C} classes: range [{y.min()}, {y.max()}]")
    return y.astype(np.int64)


def check_data(X, y, C: int, d: int, name: str = "data") -> tuple[np.ndarray, np.ndarray]:
    X = as_matrix(X, f"{name} X")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 samples)")
    if X.shape[1] != d:
        raise ValueError(f"{name} X has {X.shape[1]} features, the weights expect {d}")
    return X, as_labels(y, X.shape[0], C, f"{name} y")


# margins -------------------------------------------------------------------------------------------


def raw_pair_margins(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(n, C-1) raw pair margins (w_y − w_c)ᵀx for every c ≠ y (no validation)."""
    Z = X @ W.T
    zy = Z[np.arange(len(y)), y]
    D = zy[:, None] - Z
    C = W.shape[0]
    mask = np.ones_like(D, dtype=bool)
    mask[np.arange(len(y)), y] = False
    return D[mask].reshape(len(y), C - 1)


def normalized_margins(W, X, y) -> np.ndarray:
    r"""Normalised multiclass margins of a linear head.

    .. math:: \gamma_i(W) = \frac{(w_{y_i} - \max_{c \ne y_i} w_c)^\top x_i}{\lVert W \rVert_F}

    The raw margin divided by the Frobenius norm of the (merged) weights — a factor that depends
    only on ``W``, never on the sample — so the margins are invariant to rescaling ``W``.

    Args:
        W: (C, d) head, numpy array or torch tensor.
        X: (n, d) inputs.
        y: (n,) integer labels in ``[0, C)``.

    Returns:
        (n,) float64 margins; positive where the sample is classified correctly.

    Example:
        >>> normalized_margins(np.eye(2), np.array([[2.0, 0.0]]), np.array([0]))
        array([1.41421356])
    """
    W = as_matrix(W, "W")
    if W.shape[0] < 2:
        raise ValueError(f"W must have at least 2 classes (rows), got shape {W.shape}")
    X, y = check_data(X, y, W.shape[0], W.shape[1], "data")
    nrm = np.linalg.norm(W)
    if nrm == 0:
        raise ValueError("W is zero: the normalised margin is undefined")
    return raw_pair_margins(W, X, y).min(axis=1) / nrm


# hard-margin SVM -------------------------------------------------------------------------------------


def _row_basis(X: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """An orthonormal basis (d, k) of the span of the rows of X."""
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    k = int(np.sum(s > tol * max(s[0], 1e-300)))
    return Vt[:k].T


def multiclass_svm(X, y, n_classes: int) -> np.ndarray:
    r"""The hard-margin multiclass (Crammer–Singer) SVM, solved with cvxpy.

    .. math:: \min_W \tfrac12\lVert W\rVert_F^2 \quad\text{s.t.}\quad (w_{y_i}-w_c)^\top x_i \ge 1
              \;\;\forall i,\, c\ne y_i

    Its normalised margin is ``1 / ‖W‖_F``, the largest any linear head reaches on (X, y). The rows
    of the solution lie in the span of the data, so it is solved in an orthonormal basis of that
    span (exact, and fast for data in a low-dimensional subspace).

    Returns:
        (C, d) weights. Raises ``ValueError`` when the data are not linearly separable.
    """
    import cvxpy as cp

    X = as_matrix(X, "X")
    y = as_labels(y, X.shape[0], n_classes)
    if X.shape[0] == 0:
        raise ValueError("X is empty")
    Q = _row_basis(X)
    Z = X @ Q  # (n, k)
    V = cp.Variable((n_classes, Q.shape[1]))
    n = len(y)
    # (v_y − v_c)ᵀz_i as one affine expression over all pairs
    rows, cols = [], []
    for c in range(n_classes):
        idx = np.nonzero(y != c)[0]
        rows.append(idx)
        cols.append(np.full(len(idx), c))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    Ey = np.zeros((len(rows), n_classes))
    Ey[np.arange(len(rows)), y[rows]] = 1.0
    Ey[np.arange(len(rows)), cols] -= 1.0
    S = cp.sum(cp.multiply(Ey @ V, Z[rows]), axis=1)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(V)), [S >= 1])
    prob.solve(solver=cp.CLARABEL)
    if prob.status not in ("optimal", "optimal_inaccurate") or V.value is None:
        raise ValueError(f"the data are not linearly separable (SVM status {prob.status}, n={n})")
    return V.value @ Q.T


def cosine(A, B) -> float:
    """Frobenius cosine ⟨A, B⟩ / (‖A‖‖B‖) (0 when either is zero)."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    na, nb = np.linalg.norm(A), np.linalg.norm(B)
    return 0.0 if na == 0 or nb == 0 else float(np.sum(A * B) / (na * nb))


# closed-form margins vs λ -----------------------------------------------------------------------


def ce_gradient(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∇_W of the mean softmax cross-entropy of logits X Wᵀ, (C, d)."""
    Z = X @ W.T
    Z = Z - Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(y)), y] -= 1.0
    return P.T @ X / len(y)


def lambda_max(W0, X, y) -> float:
    r"""The smallest λ at which the optimal adapter is exactly zero (derived).

    With the factor penalty (λ/2)(‖A‖²_F + ‖B‖²_F), the minimum over factorisations ΔW = BA is
    λ‖ΔW‖_* (nuclear norm), so the adapter solves min L(W₀ + ΔW) + λ‖ΔW‖_* (with rank ≤ r). ΔW = 0
    is optimal iff 0 ∈ ∇L(W₀) + λ ∂‖0‖_*, i.e. iff λ ≥ ‖∇L(W₀)‖_op (spectral norm).
    """
    W0 = as_matrix(W0, "W0")
    X, y = check_data(X, y, W0.shape[0], W0.shape[1])
    return float(np.linalg.norm(ce_gradient(W0, X, y), 2))


def _scale_rate(s: float, M: np.ndarray) -> float:
    """−dL/ds for L(s) = mean_i log(1 + Σ_c exp(−s m_ic)) (M: (n, C-1) pair margins of the unit
    direction, all positive, s ≥ 0, so no exponent overflows)."""
    E = np.exp(-s * M)
    return float(np.mean((M * E).sum(axis=1) / (1.0 + E.sum(axis=1))))


def closed_form_margins(lam, *, W0, X_pt, y_pt, X_ft, y_ft, W_svm=None) -> dict:
    r"""Predicted normalised PT and FT margins of W₀ + ΔW(λ) (derived; exact orthogonality ρ = 0).

    Assumptions (the theory regime): the FT inputs lie in a subspace orthogonal to the PT inputs,
    so W₀x = 0 on FT data and ΔW x = 0 on PT data (the adapter's rows lie in the FT data span),
    and inside the alignment band ΔW = s·Ŵ with Ŵ = W_svm/‖W_svm‖_F the unit SVM direction.
    With ν = ‖Ŵ‖_* and m_ic the pair margins of Ŵ (min γ̂ = 1/‖W_svm‖_F), the penalty is λsν and
    the scale solves the stationarity condition of min_s L(sŴ) + λsν:

    .. math:: \lambda\nu = \frac1n\sum_i \frac{\sum_{c} m_{ic} e^{-s m_{ic}}}{1 + \sum_c e^{-s m_{ic}}}
              \;\;\Rightarrow\;\; s(\lambda) \approx \frac{1}{\hat\gamma}\log\frac{k\hat\gamma}{n\lambda\nu}

    (leading order, k support pairs). Since ⟨W₀, Ŵ⟩ = 0 the merged norm is √(‖W₀‖² + s²), so

    .. math:: \gamma_{FT}(\lambda) = \frac{s\hat\gamma}{\sqrt{\lVert W_0\rVert^2 + s^2}}, \qquad
              \gamma_{PT}(\lambda) = \frac{q_0}{\sqrt{\lVert W_0\rVert^2 + s^2}} > 0

    with q₀ W₀'s raw PT min-margin: smaller λ → larger s → larger FT margin, PT margin shrinking
    like 1/s but never reaching 0. The alignment band's upper edge ``lam_band`` is the λ at which
    the predicted raw FT margin sγ̂ equals log C (the softmax is saturated on every sample beyond
    it); above ``lam_max`` = ‖∇L(W₀)‖_op the adapter is exactly zero (:func:`lambda_max`).

    Returns:
        dict with arrays ``pt``, ``ft``, ``scale`` (per λ) and floats ``lam_band``, ``lam_max``,
        ``svm_margin`` (γ̂), ``nuclear`` (ν).
    """
    from scipy.optimize import brentq

    lam = np.atleast_1d(np.asarray(lam, dtype=float))
    if np.any(~np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("lam must be positive and finite")
    W0 = as_matrix(W0, "W0")
    C, d = W0.shape
    X_pt, y_pt = check_data(X_pt, y_pt, C, d, "PT data")
    X_ft, y_ft = check_data(X_ft, y_ft, C, d, "FT data")
    if W_svm is None:
        W_svm = multiclass_svm(X_ft, y_ft, C)
    W_svm = as_matrix(W_svm, "W_svm")
    Wh = W_svm / np.linalg.norm(W_svm)
    nu = float(np.linalg.svd(Wh, compute_uv=False).sum())
    M = raw_pair_margins(Wh, X_ft, y_ft)
    g_hat = float(M.min())
    q0 = float(raw_pair_margins(W0, X_pt, y_pt).min())
    n0 = float(np.linalg.norm(W0))
    rate0 = _scale_rate(0.0, M)

    def scale(lv: float) -> float:
        target = lv * nu
        if target >= rate0:
            return 0.0
        hi = 1.0
        while _scale_rate(hi, M) > target:
            hi *= 2.0
            if hi > 1e8:
                return math.inf
        return brentq(lambda s: _scale_rate(s, M) - target, 0.0, hi, xtol=1e-12, rtol=1e-12)

    s = np.array([scale(lv) for lv in lam])
    den = np.sqrt(n0**2 + s**2)
    # the band edge: predicted raw FT margin s·γ̂ = log C  ⇔  λ = rate(log C / γ̂) / ν
    lam_band = _scale_rate(math.log(C) / g_hat, M) / nu
    return {"pt": q0 / den, "ft": s * g_hat / den, "scale": s, "lam_band": float(lam_band),
            "lam_max": lambda_max(W0, X_ft, y_ft), "svm_margin": g_hat, "nuclear": nu, "pt_raw": q0}
