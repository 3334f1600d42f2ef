"""What block GM is compared with: coordinate-wise GM (aggregated), group knockoffs (knockpy),
BH on group F-tests, a cross-validated group lasso, and block permutation importance (neural)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from groupfdr.mirror import mirror_threshold


def coordinate_gm(X, y, z, *, q: float = 0.1, offset: int = 1):
    """Gaussian Mirror (Xing et al. 2023), one coordinate at a time, written independently of the block code.

    For column j: c_j = (x_jᵀR x_j / z_jᵀR z_j)^½ with R the residual-maker of the other columns (and
    the intercept), then OLS of y on [x_j + c_j z_j, x_j − c_j z_j, X₋j] and M_j = |b⁺ + b⁻| − |b⁺ − b⁻|.

    Args:
        X: (n, p), n > p + 1. y: (n,). z: (n, p) Gaussian noise, column j for coordinate j.

    Returns:
        (M (p,), selected column mask (p,)).
    """
    X = np.asarray(X, float)
    X = X - X.mean(0)
    y = np.asarray(y, float) - np.mean(y)
    z = np.asarray(z, float)
    z = z - z.mean(0)
    n, p = X.shape
    M = np.empty(p)
    for j in range(p):
        others = np.delete(X, j, axis=1)
        Q, _ = np.linalg.qr(others)
        rx = X[:, j] - Q @ (Q.T @ X[:, j])
        rz = z[:, j] - Q @ (Q.T @ z[:, j])
        c = np.sqrt((rx @ rx) / (rz @ rz))
        design = np.column_stack([X[:, j] + c * z[:, j], X[:, j] - c * z[:, j], others])
        b = np.linalg.lstsq(design, y, rcond=None)[0]
        M[j] = abs(b[0] + b[1]) - abs(b[0] - b[1])
    tau = mirror_threshold(M, q, offset=offset)
    return M, M >= tau


def any_selected(column_mask, idx) -> np.ndarray:
    """A group is selected when any of its columns is ("any lag selected")."""
    column_mask = np.asarray(column_mask, bool)
    return np.array([column_mask[g].any() for g in idx])


def bh_group_ftest(X, y, idx, *, q: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Hochberg over the OLS F-test p-values of H_g: β_g = 0 (n > p + 1 only).

    F_g = β̂_gᵀ ([(XᵀX)⁻¹]_gg)⁻¹ β̂_g / (L_g σ̂²) ~ F(L_g, n − p − 1) under H_g.

    Returns:
        (p-values (G,), selected (G,) bool).
    """
    X = np.asarray(X, float)
    X = X - X.mean(0)
    y = np.asarray(y, float) - np.mean(y)
    n, p = X.shape
    if n <= p + 1:
        raise ValueError(f"the group F-test needs n > p + 1, got n={n}, p={p}")
    XtX_inv = np.linalg.inv(X.T @ X)
    beta = XtX_inv @ (X.T @ y)
    dof = n - p - 1
    sigma2 = float(np.sum((y - X @ beta) ** 2) / dof)
    pv = np.empty(len(idx))
    for k, g in enumerate(idx):
        b = beta[g]
        F = b @ np.linalg.solve(XtX_inv[np.ix_(g, g)], b) / (len(g) * sigma2)
        pv[k] = stats.f.sf(F, len(g), dof)
    adj = stats.false_discovery_control(pv, method="bh")
    return pv, adj <= q


def group_knockoffs(X, y, groups, *, q: float = 0.1, method: str = "sdp", random_state=None) -> np.ndarray:
    """Model-X group knockoffs (knockpy): Gaussian sampler with the covariance *estimated*
    (Ledoit–Wolf), group-lasso-free lasso coefficient-difference statistics, knockoff+ at level q.

    Returns:
        (G,) bool, in sorted-label order.
    """
    from knockpy.knockoff_filter import KnockoffFilter

    labels = np.asarray(groups)
    uniq, codes = np.unique(labels, return_inverse=True)
    if random_state is not None:
        np.random.seed(int(np.random.default_rng(random_state).integers(2**31)))  # knockpy draws from the global RNG
    kf = KnockoffFilter(ksampler="gaussian", fstat="lasso", knockoff_kwargs={"method": method})
    rej = kf.forward(X=np.asarray(X, float), y=np.asarray(y, float), groups=codes + 1, fdr=q)
    return np.asarray(rej, bool).reshape(-1)[: len(uniq)] if rej.size == len(uniq) else \
        np.array([rej[codes == k].any() for k in range(len(uniq))])


# group lasso ----------------------------------------------------------------------------------

def group_lasso_path(X, y, idx, lams, *, n_iter: int = 200) -> np.ndarray:
    """Group-lasso coefficients (len(lams), p) by FISTA with warm starts, weights √L_g.

    minimise (1/2n)‖y − Xβ‖² + λ Σ_g √L_g ‖β_g‖.
    """
    X = np.asarray(X, float)
    n, p = X.shape
    order = np.concatenate(idx)                      # groups made contiguous for a vectorised prox
    starts = np.cumsum([0] + [len(g) for g in idx])[:-1]
    sizes = np.array([len(g) for g in idx])
    Xo = X[:, order]
    step = n / np.linalg.norm(Xo, 2) ** 2
    Xty, XtX = Xo.T @ y / n, Xo.T @ Xo / n
    w = np.sqrt(sizes)
    beta = np.zeros(p)
    out = np.empty((len(lams), p))
    for k, lam in enumerate(lams):
        b_prev, v, t = beta.copy(), beta.copy(), 1.0
        for _ in range(n_iter):
            u = v - step * (XtX @ v - Xty)
            nrm = np.sqrt(np.add.reduceat(u * u, starts))
            shrink = np.maximum(1 - step * lam * w / np.maximum(nrm, 1e-300), 0.0)
            b = u * np.repeat(shrink, sizes)
            t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
            v = b + (t - 1) / t_next * (b - b_prev)
            b_prev, t = b, t_next
        beta = b_prev
        out[k, order] = beta
    return out


def group_lasso_cv(X, y, idx, *, n_lams: int = 12, cv: int = 5, random_state=0) -> np.ndarray:
    """Naive group lasso: λ by ``cv``-fold CV on a log grid from λ_max down 100×; the groups with a
    non-zero block are selected (no FDR control). Returns (G,) bool."""
    X = np.asarray(X, float)
    X = X - X.mean(0)
    y = np.asarray(y, float) - np.mean(y)
    n = X.shape[0]
    lam_max = max(np.linalg.norm(X[:, g].T @ y / n) / np.sqrt(len(g)) for g in idx)
    lams = lam_max * np.logspace(0, -2, n_lams)
    folds = np.random.default_rng(random_state).permutation(n) % cv
    err = np.zeros(n_lams)
    for f in range(cv):
        tr, te = folds != f, folds == f
        B = group_lasso_path(X[tr], y[tr], idx, lams)
        err += ((X[te] @ B.T - y[te, None]) ** 2).sum(0)
    beta = group_lasso_path(X, y, idx, lams[: int(np.argmin(err)) + 1])[-1]
    return np.array([np.any(beta[g] != 0) for g in idx])


def fdp_and_power(selected, active_mask) -> tuple[float, float]:
    """False discovery proportion (0 when nothing is selected) and power of one selection."""
    selected, active_mask = np.asarray(selected, bool), np.asarray(active_mask, bool)
    n_sel = selected.sum()
    fdp = float((selected & ~active_mask).sum() / max(n_sel, 1))
    power = float((selected & active_mask).sum() / max(active_mask.sum(), 1))
    return fdp, power


__all__ = ["any_selected", "bh_group_ftest", "coordinate_gm", "fdp_and_power", "group_knockoffs",
           "group_lasso_cv", "group_lasso_path"]
