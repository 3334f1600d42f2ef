"""Tabular MDPs: soft value iteration, exact and empirical occupancy, the MCE dual and its Fisher.

Shapes: ``P`` is ``(S, A, S')``, rewards ``r`` are ``(S, A)``, ``p0`` is ``(S,)``. A problem is either
discounted (``gamma`` in [0, 1), infinite horizon, stationary policy ``(S, A)``) or finite-horizon
(``horizon=H``, undiscounted unless ``gamma`` is given, time-indexed policy ``(H, S, A)``).

Occupancies are normalised alike for expert and learner (imitation PR #414): the total mass is
``Σ_t γ^t`` (``1/(1-γ)`` discounted, ``Σ_{t<H} γ^t`` finite-horizon), never 1.
"""

from __future__ import annotations

import warnings

import numpy as np

from paperworks.utils import check_float, check_int

__all__ = ["soft_value_iteration", "occupancy", "empirical_occupancy", "occupancy_mass", "validate_mdp",
           "mce_dual", "expert_nll", "policy_return", "occupancy_jacobian", "sample_trajectories",
           "expert_policy"]


# validation ---------------------------------------------------------------------------------------

def validate_mdp(P, r=None, p0=None, *, gamma=None, horizon=None):
    """Checked copies ``(P, r, p0, gamma, horizon)``; a clear error naming the bad argument."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 3 or P.shape[0] != P.shape[2] or P.shape[0] < 1 or P.shape[1] < 1:
        raise ValueError(f"P must have shape (S, A, S) with S, A >= 1, got {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError("P must be finite (found NaN or inf)")
    if np.any(P < -1e-12):
        raise ValueError("P must be non-negative: transition rows are probabilities")
    if not np.allclose(P.sum(-1), 1.0, atol=1e-8):
        bad = np.argwhere(~np.isclose(P.sum(-1), 1.0, atol=1e-8))[0]
        raise ValueError(f"P rows must sum to 1; row (s={bad[0]}, a={bad[1]}) sums to {P[tuple(bad)].sum():.6g}")
    P = np.clip(P, 0.0, None)
    S, A = P.shape[:2]
    if r is not None:
        r = np.asarray(r, dtype=float)
        if r.shape != (S, A):
            raise ValueError(f"reward must have shape (S, A) = {(S, A)}, got {r.shape}")
        if not np.all(np.isfinite(r)):
            raise ValueError("reward must be finite (found NaN or inf)")
    if p0 is not None:
        p0 = np.asarray(p0, dtype=float)
        if p0.shape != (S,):
            raise ValueError(f"p0 must have shape (S,) = {(S,)}, got {p0.shape}")
        if np.any(p0 < 0) or not np.isclose(p0.sum(), 1.0, atol=1e-8):
            raise ValueError("p0 must be a probability vector (non-negative, summing to 1)")
    gamma, horizon = _check_gamma_horizon(gamma, horizon)
    return P, r, p0, gamma, horizon


def _check_gamma_horizon(gamma, horizon):
    horizon = check_int(horizon, "horizon", minimum=1, optional=True)
    if horizon is None:
        if gamma is None:
            raise ValueError("give gamma in [0, 1) (discounted) or horizon >= 1 (finite horizon)")
        gamma = check_float(gamma, "gamma", minimum=0.0, maximum=1.0, open_maximum=True)
    else:
        gamma = 1.0 if gamma is None else check_float(gamma, "gamma", minimum=0.0, maximum=1.0)
    return gamma, horizon


def occupancy_mass(gamma, horizon=None) -> float:
    """``Σ_t γ^t``: the total mass of every occupancy here."""
    if horizon is None:
        return 1.0 / (1.0 - gamma)
    return float(horizon) if gamma == 1.0 else float((1 - gamma ** horizon) / (1 - gamma))


# soft value iteration -----------------------------------------------------------------------------

def _lse(Q):
    """log Σ_a exp Q over the last axis; works for complex Q (complex-step derivatives)."""
    m = (Q.real if np.iscomplexobj(Q) else Q).max(-1, keepdims=True)
    return (m + np.log(np.exp(Q - m).sum(-1, keepdims=True)))[..., 0]


def _soft_vi(P, r, gamma, horizon, tol=1e-12, max_iter=100_000, V_init=None):
    if horizon is not None:
        S, A = r.shape[-2:]
        V = np.zeros(r.shape[:-2] + (horizon + 1, S), dtype=r.dtype)
        Q = np.zeros(r.shape[:-2] + (horizon, S, A), dtype=r.dtype)
        Pf = P.reshape(S * A, P.shape[2])
        for t in range(horizon - 1, -1, -1):
            if r.ndim == 2:
                Q[t] = r + gamma * (Pf @ V[t + 1]).reshape(S, A)
            else:
                Q[..., t, :, :] = r + gamma * np.einsum("sax,...x->...sa", P, V[..., t + 1, :])
            V[..., t, :] = _lse(Q[..., t, :, :])
        pi = np.exp(Q - V[..., :horizon, :, None])
        return V[..., :horizon, :], Q, pi
    V = _lse(r) if V_init is None else V_init
    S, A = P.shape[:2]
    Pf = P.reshape(S * A, S)
    if r.ndim == 2 and not np.iscomplexobj(r):
        # soft policy iteration (Newton's method on the soft Bellman equation): quadratic convergence
        eye = np.eye(S)
        done = False
        for _ in range(50):
            Q = r + gamma * (Pf @ V).reshape(S, A)
            W = _lse(Q)
            pi = np.exp(Q - W[:, None])
            P_pi = np.einsum("sa,sax->sx", pi, P)
            V_new = np.linalg.solve(eye - gamma * P_pi, np.sum(pi * (r - np.log(np.clip(pi, 1e-300, None))), -1))
            done = np.max(np.abs(V_new - V)) < tol * max(1.0, np.max(np.abs(V_new)))
            V = V_new
            if done:
                break
        if done:
            Q = r + gamma * (Pf @ V).reshape(S, A)
            V = _lse(Q)
            return V, Q, np.exp(Q - V[:, None])
        # Newton stalled at rounding level (huge rewards): finish with plain value iteration below
    if r.ndim == 2:
        if not np.all(np.isfinite(V)):
            raise FloatingPointError("soft value iteration: the values are not finite (rewards diverged?)")

        def bellman(V):
            return r + gamma * (Pf @ V).reshape(S, A)
    else:
        def bellman(V):
            return r + gamma * np.einsum("sax,...x->...sa", P, V)
    for _ in range(max_iter):
        Q = bellman(V)
        V_new = _lse(Q)
        if np.max(np.abs(V_new - V)) < max(tol, 1e-15 / (1 - gamma)) * max(1.0, np.max(np.abs(V_new))):
            V = V_new
            break
        V = V_new
    else:  # pragma: no cover - γ < 1 contracts
        raise RuntimeError("soft value iteration did not converge")
    Q = bellman(V)
    V = _lse(Q)
    return V, Q, np.exp(Q - V[..., None])


def soft_value_iteration(P, r, *, gamma=None, horizon=None):
    """Maximum-causal-entropy (soft) value iteration.

    ``Q(s,a) = r(s,a) + γ Σ_s' P(s'|s,a) V(s')``, ``V(s) = log Σ_a exp Q(s,a)``, ``π(a|s) = exp(Q - V)``.

    Args:
        P: transitions ``(S, A, S)``; r: reward ``(S, A)``.
        gamma: discount in [0, 1) (infinite horizon), or the per-step discount of a finite horizon.
        horizon: ``H`` for a finite horizon (``V_H = 0``); then the outputs carry a leading time axis.

    Returns:
        ``(V, Q, pi)``: ``(S,), (S, A), (S, A)`` discounted, ``(H, S), (H, S, A), (H, S, A)`` finite-horizon.

    Example:
        >>> P = np.full((2, 2, 2), 0.5)
        >>> V, Q, pi = soft_value_iteration(P, np.zeros((2, 2)), gamma=0.9)
        >>> bool(np.allclose(pi, 0.5))
        True
    """
    P, r, _, gamma, horizon = validate_mdp(P, r, gamma=gamma, horizon=horizon)
    return _soft_vi(P, r, gamma, horizon)


# occupancy ----------------------------------------------------------------------------------------

def _occ(P, pi, p0, gamma, horizon):
    if horizon is not None:
        D = np.zeros((horizon, P.shape[0]), dtype=np.result_type(pi, float))
        D[0] = p0
        Pf = P.reshape(-1, P.shape[2])
        for t in range(horizon - 1):
            D[t + 1] = gamma * ((D[t][:, None] * pi[t]).ravel() @ Pf)
        return np.einsum("ts,tsa->sa", D, pi)
    S = P.shape[0]
    P_pi = np.einsum("sa,sax->sx", pi, P)
    rho = np.linalg.solve(np.eye(S) - gamma * P_pi.T, p0)
    return rho[:, None] * pi


def occupancy(P, pi, p0, *, gamma=None, horizon=None):
    """Exact discounted state–action occupancy ``d(s,a) = Σ_t γ^t Pr(s_t=s, a_t=a)``.

    Args:
        P: ``(S, A, S)``; pi: ``(S, A)`` (or ``(H, S, A)`` with ``horizon``); p0: ``(S,)``.

    Returns:
        ``d`` of shape ``(S, A)``, total mass ``Σ_t γ^t`` (see :func:`occupancy_mass`).
    """
    P, _, p0, gamma, horizon = validate_mdp(P, None, p0, gamma=gamma, horizon=horizon)
    pi = np.asarray(pi, dtype=float)
    want = (P.shape[:2] if horizon is None else (horizon,) + P.shape[:2])
    if pi.shape == P.shape[:2] and horizon is not None:
        pi = np.broadcast_to(pi, want)
    if pi.shape != want:
        raise ValueError(f"pi must have shape {want}, got {pi.shape}")
    if np.any(pi < -1e-12) or not np.allclose(pi.sum(-1), 1.0, atol=1e-8):
        raise ValueError("pi rows must be probability vectors")
    return _occ(P, pi, p0, gamma, horizon)


def empirical_occupancy(trajectories, n_states, n_actions, *, gamma=None, horizon=None):
    """Sample occupancy ``d̂(s,a) = (1/N) Σ_i Σ_t γ^t 1[s_t=s, a_t=a]`` from ``(s, a)`` trajectories.

    Normalised like :func:`occupancy` (mass ``Σ_t γ^t`` for full-length trajectories; imitation #414).
    Rows with a state or action out of range are skipped, counted and warned about.

    Args:
        trajectories: a list of ``(T_i, 2)`` integer arrays (or lists of ``(s, a)`` pairs).
        gamma: the discount (default 1 with a horizon); horizon: trajectories are cut at ``H`` steps.
    """
    S = check_int(n_states, "n_states")
    A = check_int(n_actions, "n_actions")
    gamma, horizon = _check_gamma_horizon(gamma, horizon)
    if isinstance(trajectories, np.ndarray) and trajectories.ndim == 2:
        trajectories = [trajectories]
    if len(trajectories) == 0:
        raise ValueError("trajectories must hold at least one trajectory")
    d = np.zeros((S, A))
    skipped = []
    for i, tr in enumerate(trajectories):
        tr = np.asarray(tr)
        if tr.ndim != 2 or tr.shape[1] != 2:
            raise ValueError(f"trajectories[{i}] must have shape (T, 2) of (state, action), got {tr.shape}")
        if not np.issubdtype(tr.dtype, np.integer):
            if not np.all(np.isfinite(tr)) or np.any(tr != np.round(tr)):
                raise TypeError(f"trajectories[{i}] must hold integer states and actions")
            tr = tr.astype(int)
        T = len(tr) if horizon is None else min(len(tr), horizon)
        s, a = tr[:T, 0], tr[:T, 1]
        ok = (s >= 0) & (s < S) & (a >= 0) & (a < A)
        skipped += [(i, int(t)) for t in np.nonzero(~ok)[0]]
        t = np.arange(T)[ok]
        np.add.at(d, (s[ok], a[ok]), gamma ** t)
    if skipped:
        warnings.warn(f"empirical_occupancy: skipped {len(skipped)} rows with a state or action out of range "
                      f"(first: trajectory {skipped[0][0]}, step {skipped[0][1]})", stacklevel=2)
    return d / len(trajectories)


# the MCE dual ---------------------------------------------------------------------------------------

def mce_dual(P, r, p0, d_E, *, gamma=None, horizon=None):
    """The MCE-IRL dual ``g(r) = Σ_s p0(s) V_r(s) - <d_E, r>`` (minimised); gradient ``d_π_r - d_E``."""
    P, r, p0, gamma, horizon = validate_mdp(P, r, p0, gamma=gamma, horizon=horizon)
    V, _, _ = _soft_vi(P, r, gamma, horizon)
    V0 = V[0] if horizon is not None else V
    return float(p0 @ V0 - np.sum(d_E * r))


def expert_nll(pi, d_E):
    """Expert negative log-likelihood per step: ``-Σ d_E(s,a) log π(a|s) / Σ d_E`` (time-averaged π)."""
    pi = np.asarray(pi)
    if pi.ndim == 3:
        pi = pi.mean(0)
    return float(-np.sum(d_E * np.log(np.clip(pi, 1e-300, None))) / d_E.sum())


def policy_return(P, pi, p0, R, *, gamma=None, horizon=None):
    """True-reward return ``<d_π, R>`` of a policy (same normalisation as the occupancy)."""
    return float(np.sum(occupancy(P, pi, p0, gamma=gamma, horizon=horizon) * R))


def expert_policy(d):
    """``π̂(a|s) = d(s,a) / Σ_a d(s,a)``; uniform where the state is unvisited."""
    d = np.asarray(d, dtype=float)
    n = d.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        pi = np.where(n > 0, d / np.where(n > 0, n, 1.0), 1.0 / d.shape[-1])
    return pi


# Fisher: the Jacobian of the occupancy (Hessian of the log-partition p0·V) ----------------------------

def occupancy_jacobian(P, r, p0, *, gamma=None, horizon=None):
    """``F(r) = ∂ d_π_r / ∂ r`` as an ``(SA, SA)`` matrix: the Fisher information of the MCE family.

    ``F`` is the Hessian of the log-partition ``A(r) = p0·V_r`` (symmetric, positive semi-definite; its
    null space holds the potential-shaping directions). Discounted: closed form through
    ``(I - γ P_π)^{-1}``; finite horizon: complex-step differentiation, batched over the ``SA`` directions
    (exact to rounding).
    """
    P, r, p0, gamma, horizon = validate_mdp(P, r, p0, gamma=gamma, horizon=horizon)
    S, A = r.shape
    if horizon is not None:
        h = 1e-30
        E = np.eye(S * A).reshape(S * A, S, A)
        rc = r[None] + 1j * h * E
        _, _, pi = _soft_vi(P, rc, gamma, horizon)             # (SA, H, S, A)
        D = np.zeros((S * A, horizon, S), dtype=complex)
        D[:, 0] = p0
        for t in range(horizon - 1):
            D[:, t + 1] = gamma * np.einsum("ks,ksa,sax->kx", D[:, t], pi[:, t], P)
        d = np.einsum("kts,ktsa->ksa", D, pi)
        return d.reshape(S * A, S * A).imag.T / h
    _, _, pi = _soft_vi(P, r, gamma, None)
    P_pi = np.einsum("sa,sax->sx", pi, P)
    eye = np.eye(S)
    E_pi = np.zeros((S, S * A))                                 # E_pi[s, (s, a)] = π(a|s)
    E_pi[np.repeat(np.arange(S), A), np.arange(S * A)] = pi.ravel()
    M = np.linalg.solve(eye - gamma * P_pi, E_pi)                  # ∂V/∂r
    Pf = P.reshape(S * A, S)
    dQ = np.eye(S * A) + gamma * Pf @ M                          # ∂Q/∂r
    dlogpi = dQ - np.repeat(M, A, axis=0)                        # ∂ log π / ∂r
    rho = np.linalg.solve(eye - gamma * P_pi.T, p0)
    d = (rho[:, None] * pi).ravel()
    drho = gamma * np.linalg.solve(eye - gamma * P_pi.T, Pf.T @ (d[:, None] * dlogpi))
    return np.repeat(drho, A, axis=0) * pi.ravel()[:, None] + d[:, None] * dlogpi


# sampling -----------------------------------------------------------------------------------------

def sample_trajectories(P, pi, p0, n, length, rng):
    """``n`` trajectories of ``length`` steps as ``(length, 2)`` arrays of (state, action)."""
    S, A = P.shape[:2]
    pi = np.asarray(pi)
    out = np.zeros((n, length, 2), dtype=np.int64)
    s = rng.choice(S, size=n, p=p0)
    cP = np.cumsum(P, -1)
    for t in range(length):
        pt = pi[t] if pi.ndim == 3 else pi
        cpi = np.cumsum(pt[s], -1)
        a = np.minimum((rng.random(n)[:, None] > cpi).sum(-1), A - 1)
        out[:, t, 0], out[:, t, 1] = s, a
        s = np.minimum((rng.random(n)[:, None] > cP[s, a]).sum(-1), S - 1)
    return list(out)
