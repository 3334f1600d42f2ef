"""Ranking metrics (τ_w, NDCG@K, Hit@K, Recall@K) and transferability estimators (LogME, LEEP, NCE).

All ranking metrics take, for one query (a dataset and metric), the true scores ``y_true``
(higher is better, e.g. oriented scores) and the predicted scores ``y_score`` of the same candidates.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from paperworks import check_int


def _pair(y_true, y_score):
    a = np.asarray(y_true, dtype=float).ravel()
    b = np.asarray(y_score, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"y_true and y_score differ in length: {a.size} vs {b.size}")
    if a.size < 2:
        raise ValueError(f"a ranking needs at least 2 candidates, got {a.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("y_true and y_score must be finite")
    return a, b


def weighted_tau(y_true, y_score) -> float:
    """Weighted Kendall τ_w (``scipy.stats.weightedtau``, hyperbolic weights on both rankings).

    A constant prediction (or constant truth) ranks nothing: τ_w = 0 rather than NaN.
    """
    a, b = _pair(y_true, y_score)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(stats.weightedtau(a, b).statistic)


def _order(x) -> np.ndarray:
    return np.argsort(-x, kind="stable")  # ties keep the input order


def ndcg_at_k(y_true, y_score, k: int = 10) -> float:
    """NDCG@k with graded gains ``(y − min)/(max − min)`` and discount ``1/log2(rank + 1)``."""
    a, b = _pair(y_true, y_score)
    k = min(check_int(k, "k", minimum=1), a.size)
    gain = (a - a.min()) / np.ptp(a) if np.ptp(a) > 0 else np.ones_like(a)
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = float(np.sort(gain)[::-1][:k] @ disc)
    return float(gain[_order(b)[:k]] @ disc / ideal) if ideal > 0 else 0.0


def hit_at_k(y_true, y_score, k: int = 10) -> float:
    """1 when a truly best candidate is among the top ``k`` predicted, else 0."""
    a, b = _pair(y_true, y_score)
    k = min(check_int(k, "k", minimum=1), a.size)
    return float(np.any(a[_order(b)[:k]] >= a.max()))


def recall_at_k(y_true, y_score, k: int = 10) -> float:
    """|predicted top-k ∩ true top-k| / k (true ties broken by input order)."""
    a, b = _pair(y_true, y_score)
    k = min(check_int(k, "k", minimum=1), a.size)
    return len(set(_order(b)[:k]) & set(_order(a)[:k])) / k


def ranking_metrics(y_true, y_score, k: int = 10) -> dict[str, float]:
    """``{"tau_w", "ndcg", "hit", "recall"}`` at cut-off ``k`` for one query.

    Example:
        >>> ranking_metrics([3.0, 2.0, 1.0], [0.9, 0.5, 0.1], k=1)["hit"]
        1.0
    """
    k = check_int(k, "k", minimum=1)
    return {"tau_w": weighted_tau(y_true, y_score), "ndcg": ndcg_at_k(y_true, y_score, k),
            "hit": hit_at_k(y_true, y_score, k), "recall": recall_at_k(y_true, y_score, k)}


# Plackett–Luce -------------------------------------------------------------------------------------

def plackett_luce_nll(scores, order) -> float:
    """−log P(order | scores) under Plackett–Luce: −Σ_i [s_{π_i} − log Σ_{j≥i} exp s_{π_j}] (numpy reference)."""
    s = np.asarray(scores, dtype=float)[np.asarray(order)]
    tail = np.logaddexp.accumulate(s[::-1])[::-1]
    return float(-(s - tail).sum())


# transferability ----------------------------------------------------------------------------------

def _labels(y) -> np.ndarray:
    y = np.asarray(y).ravel()
    if y.size < 2:
        raise ValueError("need at least 2 labelled examples")
    return y


def logme(features, y, *, regression: bool = False, max_iter: int = 100, tol: float = 1e-6) -> float:
    """LogME (You et al., ICML 2021): the maximised log evidence per sample of a Bayesian linear model.

    For features F (n × D) and a target column y: w ~ N(0, α⁻¹I), y | F, w ~ N(Fw, β⁻¹I);
    α, β by MacKay's fixed point (γ = Σ βσᵢ/(α + βσᵢ), α = γ/‖m‖², β = (n − γ)/‖y − Fm‖²) and
    log p(y) = D/2 log α + n/2 log β − n/2 log 2π − β/2‖y − Fm‖² − α/2‖m‖² − ½ log|αI + βFᵀF|.
    Classification averages over the one-hot columns of the labels. Written here (PyPI ``logme`` is
    an unrelated package).
    """
    F = np.asarray(features, dtype=float)
    if F.ndim == 1:
        F = F[:, None]
    y = _labels(y)
    if F.shape[0] != y.size or not np.all(np.isfinite(F)):
        raise ValueError(f"features must be finite with {y.size} rows, got shape {F.shape}")
    targets = [y.astype(float)] if regression else [(y == c).astype(float) for c in np.unique(y)]
    return float(np.mean([_evidence(F, t, max_iter, tol)[0] for t in targets]))


def _evidence(F, t, max_iter, tol):
    n, D = F.shape
    sigma, V = np.linalg.eigh(F.T @ F)
    sigma = np.clip(sigma, 0, None)
    Fty = V.T @ (F.T @ t)
    alpha, beta = 1.0, 1.0
    for _ in range(max_iter):
        m_rot = beta * Fty / (alpha + beta * sigma)
        m = V @ m_rot
        gamma = float(np.sum(beta * sigma / (alpha + beta * sigma)))
        res = float(np.sum((t - F @ m) ** 2))
        new_alpha = gamma / max(float(m @ m), 1e-12)
        new_beta = (n - gamma) / max(res, 1e-12)
        done = abs(new_alpha - alpha) / alpha < tol and abs(new_beta - beta) / beta < tol
        alpha, beta = new_alpha, new_beta
        if done:
            break
    m = V @ (beta * Fty / (alpha + beta * sigma))
    res = float(np.sum((t - F @ m) ** 2))
    ev = (D / 2 * np.log(alpha) + n / 2 * np.log(beta) - n / 2 * np.log(2 * np.pi) - beta / 2 * res
          - alpha / 2 * float(m @ m) - 0.5 * float(np.sum(np.log(alpha + beta * sigma))))
    return ev / n, alpha, beta


def _joint(source_probs, y):
    P = np.asarray(source_probs, dtype=float)
    y = _labels(y)
    if P.ndim != 2 or P.shape[0] != y.size:
        raise ValueError(f"source_probs must be (n, Z) with n = {y.size}, got shape {P.shape}")
    if np.any(P < 0) or not np.allclose(P.sum(axis=1), 1, atol=1e-6):
        raise ValueError("source_probs rows must be probability distributions")
    classes, yi = np.unique(y, return_inverse=True)
    joint = np.zeros((classes.size, P.shape[1]))
    np.add.at(joint, yi, P)
    return joint / y.size, yi, P


def leep(source_probs, y) -> float:
    """LEEP (Nguyen et al., ICML 2020): (1/n) Σᵢ log Σ_z P̂(yᵢ | z) θ(xᵢ)_z, P̂ the empirical conditional."""
    joint, yi, P = _joint(source_probs, y)
    cond = joint / np.maximum(joint.sum(axis=0, keepdims=True), 1e-300)  # P(y | z)
    return float(np.mean(np.log(np.maximum(np.sum(cond[yi] * P, axis=1), 1e-300))))


def nce(source_labels, y) -> float:
    """NCE (Tran et al., ICCV 2019): −H(Y | Z) from the empirical joint of hard source labels Z and labels Y."""
    z = _labels(source_labels)
    y = _labels(y)
    if z.size != y.size:
        raise ValueError(f"source_labels and y differ in length: {z.size} vs {y.size}")
    _, zi = np.unique(z, return_inverse=True)
    onehot = np.eye(zi.max() + 1)[zi]
    joint, _, _ = _joint(onehot, y)
    pz = joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log((joint / np.maximum(pz, 1e-300))[nz])))
