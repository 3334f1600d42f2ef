"""Block Gaussian mirror: group-level mirror statistics with matrix-valued perturbations.

For a group g with block ``X_g`` (n × L) the mirror pair is

    X_g⁺ = X_g + Z_g C_g,    X_g⁻ = X_g − Z_g C_g,    Z_g ~ N(0, I_n ⊗ I_L),

and ``C_g`` (L × L) is chosen so that the two copies, residualised on the other columns X₋g, are
uncorrelated: with A = R X_g, B = R Z_g (R the residual-maker of X₋g and the intercept),

    (A + B C)ᵀ (A − B C) = 0   ⟺   CᵀBᵀB C = AᵀA   and   CᵀBᵀA symmetric.

Solution (derived for this package; no code or paper text is public): write B = U Σ Vᵀ (thin SVD),
S = (AᵀA)^½, J = (UᵀA) S⁻¹ and O the orthogonal polar factor of J (J = O P, P ⪰ 0). Then
W = O S satisfies WᵀW = AᵀA and WᵀUᵀA = S P S (symmetric), and C = V Σ⁻¹ W. At L = 1 this is
Gaussian Mirror's c_j = (x_jᵀR x_j / z_jᵀR z_j)^½ up to a sign, which swaps X⁺ and X⁻ and leaves
the statistic unchanged.

The outcome is refitted on [X₋g, X_g⁺, X_g⁻] and the statistic (inferred from the abstract) is

    M_g = ‖β̂_g⁺ + β̂_g⁻‖ − ‖β̂_g⁺ − β̂_g⁻‖,

Gaussian Mirror's M_j at L = 1. With OLS and a null group, β̂⁺ and β̂⁻ are independent and centred
(the residualised copies are orthogonal), so M_g is symmetric about 0.

Fast path (OLS): span[X₋g, X⁺, X⁻] = span[X, Z_g C_g], and the coefficients of that regression are
β̂⁺ + β̂⁻ on X_g and β̂⁺ − β̂⁻ on Z_g C_g. By Frisch–Waugh–Lovell everything follows from one
Cholesky factor of XᵀX: AᵀA = ([(XᵀX)⁻¹]_gg)⁻¹, A = X (XᵀX)⁻¹_{:,g} AᵀA, and per group only
O(npL) work — against O(np²) for a refit.

Selection uses the mirror threshold (:func:`mirror_threshold`), as in knockoff+ with ``offset=1``.

References: Xing, Zhao & Liu, *Controlling false discovery rate using Gaussian mirrors*, JASA 2023;
the grouped construction is from the NeurIPS 2026 abstract "Most FDR-controlled feature selection
methods are designed for coordinate-wise hypotheses…", reconstructed here.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

ESTIMATORS = ("ols", "lasso")
NORMS = ("euclidean", "whitened")


# groups ---------------------------------------------------------------------------------------

def as_groups(groups, p: int) -> tuple[list, list[np.ndarray]]:
    """``(labels, index arrays)`` for ``groups``, ordered by sorted label.

    ``groups`` is a length-``p`` sequence of labels (one per column; groups need not be contiguous)
    or a sequence of column-index sequences that partition ``range(p)`` (then the labels are 0..G−1).
    """
    if isinstance(groups, (str, bytes, dict)) or groups is None:
        raise TypeError(f"groups must be a length-p sequence of labels or a list of index lists, got "
                        f"{type(groups).__name__}")
    items = list(groups)
    if items and all(isinstance(g, (list, tuple, np.ndarray, range)) and np.ndim(g) == 1 for g in items):
        idx = [np.asarray(g) for g in items]
        for k, g in enumerate(idx):
            if g.size == 0:
                raise ValueError(f"groups[{k}] is empty: every group needs at least one column")
            if not np.issubdtype(g.dtype, np.integer):
                raise TypeError(f"groups[{k}] must hold integer column indices, got dtype {g.dtype}")
        flat = np.concatenate(idx)
        if sorted(flat.tolist()) != list(range(p)):
            raise ValueError(f"index-list groups must partition the {p} columns exactly once each")
        return list(range(len(idx))), [np.sort(g) for g in idx]
    labels = np.asarray(items)
    if labels.ndim != 1 or labels.shape[0] != p:
        raise ValueError(f"groups must have one label per column: length {p}, got shape {labels.shape}")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError("groups contains NaN or inf labels")
    uniq = np.unique(labels)
    return uniq.tolist(), [np.flatnonzero(labels == u) for u in uniq]


# the threshold --------------------------------------------------------------------------------

def mirror_threshold(M, q: float, *, offset: int = 1) -> float:
    """The mirror/knockoff threshold τ_q; select ``{g : M_g ≥ τ_q}``.

    τ_q = min{ t ∈ {|M_g| > 0} : (offset + #{M_g ≤ −t}) / max(#{M_g ≥ t}, 1) ≤ q }.

    Counts at t are taken with ≥ / ≤, so the denominator is the size of the set selected at t
    (knockoff+); the continuous-t form with strict inequalities has the same selections but its
    infimum need not be attained. ``offset=1`` gives finite-sample control (knockoff+), ``offset=0``
    Gaussian Mirror's original, asymptotic rule.

    Args:
        M: (G,) mirror statistics (finite).
        q: target FDR in (0, 1).
        offset: 0 or 1.

    Returns:
        τ_q, or ``inf`` when no t qualifies (nothing is selected).

    Example:
        >>> mirror_threshold([5.0, 4.0, 3.0, -0.5, 2.0], q=0.5)  # (1 + 1) / 4 ≤ 0.5 at t = 0.5
        0.5
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 1:
        raise ValueError(f"M must be 1-D, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("M must be finite (found NaN or inf)")
    q = _check_q(q)
    if isinstance(offset, bool) or offset not in (0, 1):
        raise ValueError(f"offset must be 0 or 1, got {offset!r}")
    ts = np.unique(np.abs(M[M != 0]))
    if ts.size == 0:
        return float("inf")
    neg = np.sort(-M[M < 0])  # |negative statistics|, ascending
    pos = np.sort(M[M > 0])
    n_neg = neg.size - np.searchsorted(neg, ts, side="left")  # #{M ≤ −t}
    n_pos = pos.size - np.searchsorted(pos, ts, side="left")  # #{M ≥ t}
    ok = (offset + n_neg) / np.maximum(n_pos, 1) <= q
    return float(ts[ok][0]) if ok.any() else float("inf")


def _check_q(q) -> float:
    if isinstance(q, bool) or not isinstance(q, numbers.Real):
        raise TypeError(f"q must be a number in (0, 1), got {q!r}")
    q = float(q)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    return q


# the mirror matrix ----------------------------------------------------------------------------

def mirror_matrix(A, B) -> np.ndarray:
    """C (L × L) with (A + BC)ᵀ(A − BC) = 0, for residualised block A and noise B (both n × L).

    See the module docstring for the derivation. Raises when A or B is rank-deficient (a column
    of the block is a linear combination of the others).
    """
    A, B = np.asarray(A, float), np.asarray(B, float)
    AtA = A.T @ A
    evals, evecs = np.linalg.eigh((AtA + AtA.T) / 2)
    if evals.min() <= 1e-12 * max(evals.max(), 1e-300):
        raise np.linalg.LinAlgError("the residualised block is rank-deficient")
    S = (evecs * np.sqrt(evals)) @ evecs.T
    S_inv = (evecs / np.sqrt(evals)) @ evecs.T
    U, sig, Vt = np.linalg.svd(B, full_matrices=False)
    if sig.min() <= 1e-12 * sig.max():
        raise np.linalg.LinAlgError("the residualised noise block is rank-deficient")
    J = (U.T @ A) @ S_inv
    Uj, _, Vjt = np.linalg.svd(J)
    W = (Uj @ Vjt) @ S
    return Vt.T @ (W / sig[:, None])


def _whitener(A, BC) -> np.ndarray:
    """W = (Cov(β̂⁺) + Cov(β̂⁻))^{-½}/σ for the residualised copies A ± BC (the covariance shared by
    β̂⁺ + β̂⁻ and β̂⁺ − β̂⁻ when the copies are orthogonal); built from X and Z only, never y."""
    Ap, Am = A + BC, A - BC
    cov = np.linalg.inv(Ap.T @ Ap) + np.linalg.inv(Am.T @ Am)
    ev, U = np.linalg.eigh((cov + cov.T) / 2)
    return (U / np.sqrt(ev)) @ U.T


def _stat(b_sum, b_diff, W=None) -> float:
    if W is not None:
        b_sum, b_diff = W @ b_sum, W @ b_diff
    return float(np.linalg.norm(b_sum) - np.linalg.norm(b_diff))


# OLS statistics -------------------------------------------------------------------------------

def _center(a):
    return a - a.mean(axis=0)


def ols_statistics(X, y, idx: list[np.ndarray], Z: list[np.ndarray], *,
                   norm: str = "euclidean") -> tuple[np.ndarray, list[np.ndarray]]:
    """(M, C) for every group by the shared-Gram fast path (intercept included by centring).

    ``Z[g]`` is the (n × L_g) Gaussian noise of group g (the caller draws it, so the brute-force
    reference can reuse it). ``norm="whitened"`` measures both vectors in the metric
    (Cov(β̂⁺) + Cov(β̂⁻))^{-½} (ours: an F-test-like statistic that stays null-symmetric).
    """
    X, y = _center(np.asarray(X, float)), np.asarray(y, float) - np.mean(y)
    n, p = X.shape
    cho = linalg.cho_factor(X.T @ X)
    beta = linalg.cho_solve(cho, X.T @ y)
    Sinv = linalg.cho_solve(cho, np.eye(p))
    r_y = y - X @ beta
    M, Cs = np.empty(len(idx)), []
    for k, (g, z) in enumerate(zip(idx, Z)):
        z = _center(z)
        H = Sinv @ (X.T @ z)                         # coefficients of Z on X
        RZ = z - X @ H                               # R_X Z
        AtA = np.linalg.inv(Sinv[np.ix_(g, g)])      # Schur complement: (R₋g X_g)ᵀ(R₋g X_g)
        A = X @ Sinv[:, g] @ AtA                     # R₋g X_g
        B = RZ + A @ np.linalg.solve(AtA, A.T @ z)   # R₋g Z = R_X Z + P_A Z
        C = mirror_matrix(A, B)
        r_zc = RZ @ C
        gamma = np.linalg.lstsq(r_zc, r_y, rcond=None)[0]     # β⁺ − β⁻
        b_sum = beta[g] - (H @ C)[g] @ gamma                   # β⁺ + β⁻
        M[k] = _stat(b_sum, gamma, _whitener(A, B @ C) if norm == "whitened" else None)
        Cs.append(C)
    return M, Cs


def ols_statistics_brute(X, y, idx, Z, *, norm: str = "euclidean") -> tuple[np.ndarray, list[np.ndarray]]:
    """Reference: for each group, residualise by least squares and refit [X₋g, X⁺, X⁻] from scratch."""
    X, y = _center(np.asarray(X, float)), np.asarray(y, float) - np.mean(y)
    p = X.shape[1]
    M, Cs = np.empty(len(idx)), []
    for k, (g, z) in enumerate(zip(idx, Z)):
        z = _center(z)
        rest = np.setdiff1d(np.arange(p), g)
        Xr = X[:, rest]
        A = X[:, g] - Xr @ np.linalg.lstsq(Xr, X[:, g], rcond=None)[0]
        B = z - Xr @ np.linalg.lstsq(Xr, z, rcond=None)[0]
        C = mirror_matrix(A, B)
        L = len(g)
        design = np.hstack([Xr, X[:, g] + z @ C, X[:, g] - z @ C])
        coef = np.linalg.lstsq(design, y, rcond=None)[0]
        bp, bm = coef[-2 * L:-L], coef[-L:]
        M[k] = _stat(bp + bm, bp - bm, _whitener(A, B @ C) if norm == "whitened" else None)
        Cs.append(C)
    return M, Cs


# Lasso statistics (high-dimensional) ----------------------------------------------------------

def lasso_statistics(X, y, idx, Z, *, alpha: float, node_alpha: float | None = None, max_iter: int = 5000,
                     norm: str = "euclidean"):
    """(M, C) with nodewise-Lasso residualisation and a Lasso refit on [X₋g, X⁺, X⁻].

    The residual-maker of X₋g is replaced by Lasso residuals (regularised, as Gaussian Mirror does in
    high dimensions): columns of X_g and Z_g are standardised and regressed on X₋g with penalty
    ``node_alpha`` (default √(2 log p / n), the universal rate); the outcome Lasso uses ``alpha``.
    """
    from sklearn.linear_model import Lasso

    X, y = _center(np.asarray(X, float)), np.asarray(y, float) - np.mean(y)
    n, p = X.shape
    node_alpha = float(np.sqrt(2 * np.log(p) / n)) if node_alpha is None else float(node_alpha)
    M, Cs = np.empty(len(idx)), []
    for k, (g, z) in enumerate(zip(idx, Z)):
        z = _center(z)
        rest = np.setdiff1d(np.arange(p), g)
        Xr = X[:, rest]
        T = np.hstack([X[:, g], z])
        sd = T.std(axis=0)
        sd[sd == 0] = 1.0
        node = Lasso(alpha=node_alpha, fit_intercept=False, max_iter=max_iter).fit(Xr, T / sd)
        R = T - (Xr @ node.coef_.T) * sd
        L = len(g)
        C = mirror_matrix(R[:, :L], R[:, L:])
        design = np.hstack([Xr, X[:, g] + z @ C, X[:, g] - z @ C])
        coef = Lasso(alpha=alpha, fit_intercept=False, max_iter=max_iter).fit(design, y).coef_
        bp, bm = coef[-2 * L:-L], coef[-L:]
        A, BC = R[:, :L], R[:, L:] @ C
        M[k] = _stat(bp + bm, bp - bm, _whitener(A, BC) if norm == "whitened" else None)
        Cs.append(C)
    return M, Cs


# the selector ---------------------------------------------------------------------------------

class BlockGaussianMirror(SelectorMixin, BaseEstimator):
    """Group-level FDR-controlled selection with block Gaussian mirror statistics.

    A scikit-learn selector: ``fit(X, y)``, then ``get_support()`` (a column mask) and
    ``transform(X)`` (the columns of the selected groups). The covariate distribution is never
    used: only X, y and Gaussian noise drawn by ``random_state``.

    Args:
        groups: one label per column (length p), or a list of column-index lists partitioning range(p);
            ``None``: every column is its own group (coordinate-wise Gaussian Mirror).
        q: target group-level FDR, in (0, 1).
        estimator: ``"ols"`` (needs n > p + max group size; the exact shared-Gram path) or
            ``"lasso"`` (high-dimensional; nodewise Lasso residualisation and a Lasso refit).
        alpha: the outcome Lasso's penalty; ``None`` picks it by 5-fold ``LassoCV`` on (X, y).
        offset: 1 (knockoff+, finite-sample) or 0 (Gaussian Mirror's original rule).
        norm: ``"euclidean"`` (M_g as above, the inferred statistic) or ``"whitened"`` (ours: both
            vectors measured in the metric (Cov(β̂⁺) + Cov(β̂⁻))^{-½}, built from X and Z only, which
            keeps null symmetry and weighs correlated lags as an F-test does).
        random_state: seed or ``numpy.random.Generator`` for the mirror noise Z.

    Attributes:
        groups_: the group labels, sorted.
        mirror_statistics_: (G,) M_g in that order.
        threshold_: τ_q (``inf`` when nothing is selected).
        selected_groups_: labels of the selected groups.
        mirror_matrices_: the C_g.
        n_features_in_: p.

    Example:
        >>> from groupfdr import BlockGaussianMirror, simulate_var_groups
        >>> X, y, groups, active = simulate_var_groups(600, 20, 4, 4, rho=0.5, random_state=0)
        >>> sel = BlockGaussianMirror(groups, q=0.1, random_state=0).fit(X, y)
        >>> sel.transform(X).shape[1] == 4 * len(sel.selected_groups_)
        True
    """

    def __init__(self, groups=None, q: float = 0.1, estimator: str = "ols", alpha: float | None = None,
                 offset: int = 1, norm: str = "euclidean", random_state=None):
        self.groups = groups
        self.q = q
        self.estimator = estimator
        self.alpha = alpha
        self.offset = offset
        self.norm = norm
        self.random_state = random_state

    def _check_params(self):
        _check_q(self.q)
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if isinstance(self.offset, bool) or self.offset not in (0, 1):
            raise ValueError(f"offset must be 0 or 1, got {self.offset!r}")
        if self.alpha is not None:
            if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) \
                    or not np.isfinite(self.alpha) or self.alpha <= 0:
                raise ValueError(f"alpha must be a positive finite number or None, got {self.alpha!r}")

    def fit(self, X, y):
        """Compute the mirror statistics and the selection. X: (n, p) finite; y: (n,) finite."""
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=3)
        n, p = X.shape
        labels, idx = as_groups(np.arange(p) if self.groups is None else self.groups, p)
        for lab, g in zip(labels, idx):
            if np.ptp(X[:, g], axis=0).min() == 0:
                raise ValueError(f"group {lab!r} has a constant column: its block is rank-deficient")
        Lmax = max(len(g) for g in idx)
        if self.estimator == "ols" and n <= p + Lmax:
            raise ValueError(f"estimator='ols' needs n > p + largest group size ({p} + {Lmax}); got n={n}. "
                             "Use estimator='lasso' for high-dimensional data.")
        rng = np.random.default_rng(self.random_state)
        Z = [rng.standard_normal((n, len(g))) for g in idx]
        try:
            if self.estimator == "ols":
                M, Cs = ols_statistics(X, y, idx, Z, norm=self.norm)
            else:
                alpha = self.alpha
                if alpha is None:
                    from sklearn.linear_model import LassoCV

                    alpha = float(LassoCV(cv=5, random_state=0).fit(X, y).alpha_)
                self.alpha_ = alpha
                M, Cs = lasso_statistics(X, y, idx, Z, alpha=alpha, norm=self.norm)
        except np.linalg.LinAlgError as e:
            bad = _rank_deficient_group(X, labels, idx)
            raise ValueError(f"group {bad!r} is rank-deficient given the other columns ({e})") from None
        self.groups_ = labels
        self.group_indices_ = idx
        self.mirror_statistics_ = M
        self.mirror_matrices_ = Cs
        self.threshold_ = mirror_threshold(M, self.q, offset=self.offset)
        sel = M >= self.threshold_
        self.selected_groups_ = [lab for lab, s in zip(labels, sel) if s]
        mask = np.zeros(p, bool)
        for g, s in zip(idx, sel):
            mask[g] = s
        self.support_ = mask
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    # persistence: JSON, no pickle --------------------------------------------------------------
    def save(self, path) -> Path:
        """Write the fitted selection (parameters, statistics, threshold, C_g) to one JSON file."""
        check_is_fitted(self, "support_")
        path = Path(path)
        doc = {
            "format": "groupfdr.BlockGaussianMirror/1",
            "params": {k: v for k, v in self.get_params().items() if k not in ("groups", "random_state")},
            "groups": [_json_label(g) for g in self.groups_],
            "group_indices": [g.tolist() for g in self.group_indices_],
            "n_features_in": int(self.n_features_in_),
            "mirror_statistics": self.mirror_statistics_.tolist(),
            "threshold": None if np.isinf(self.threshold_) else float(self.threshold_),
            "mirror_matrices": [c.tolist() for c in self.mirror_matrices_],
            "alpha_": getattr(self, "alpha_", None),
        }
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path) -> BlockGaussianMirror:
        """The selector saved by :meth:`save`, ready for ``transform`` without the training data."""
        doc = json.loads(Path(path).read_text())
        if doc.get("format") != "groupfdr.BlockGaussianMirror/1":
            raise ValueError(f"{path} is not a saved BlockGaussianMirror (format {doc.get('format')!r})")
        p = int(doc["n_features_in"])
        labels = np.empty(p, dtype=object)
        for lab, g in zip(doc["groups"], doc["group_indices"]):
            labels[g] = lab
        self = cls(groups=labels.tolist(), **doc["params"])
        self.groups_ = doc["groups"]
        self.group_indices_ = [np.asarray(g, dtype=int) for g in doc["group_indices"]]
        self.n_features_in_ = p
        self.mirror_statistics_ = np.asarray(doc["mirror_statistics"], float)
        self.threshold_ = float("inf") if doc["threshold"] is None else float(doc["threshold"])
        self.mirror_matrices_ = [np.asarray(c, float) for c in doc["mirror_matrices"]]
        if doc.get("alpha_") is not None:
            self.alpha_ = doc["alpha_"]
        sel = self.mirror_statistics_ >= self.threshold_
        self.selected_groups_ = [lab for lab, s in zip(self.groups_, sel) if s]
        mask = np.zeros(p, bool)
        for g, s in zip(self.group_indices_, sel):
            mask[g] = s
        self.support_ = mask
        return self


def _json_label(x):
    return x.item() if isinstance(x, np.generic) else x


def _rank_deficient_group(X, labels, idx):
    Xc = _center(X)
    p = X.shape[1]
    for lab, g in zip(labels, idx):
        rest = np.setdiff1d(np.arange(p), g)
        A = Xc[:, g] - Xc[:, rest] @ np.linalg.lstsq(Xc[:, rest], Xc[:, g], rcond=None)[0]
        s = np.linalg.svd(A, compute_uv=False)
        if s.min() <= 1e-8 * max(np.linalg.norm(Xc[:, g]), 1e-300):
            return lab
    return labels[0]
