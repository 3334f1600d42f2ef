"""Bellman operators of a finite MDP, batched over any leading dimensions.

Shapes (``...`` = any batch dimensions, e.g. datasets × bootstrap replicates):

- kernel ``P``: ``(..., S, A, S)`` with ``P[..., s, a, s'] = P(s' | s, a)``;
- rewards ``R``: ``(S, A)`` or ``(..., S, A)`` (expected reward of taking ``a`` in ``s``);
- policy ``pi``: ``(S, A)`` rows that are distributions (or ``(..., S, A)``).

Policy evaluation solves the linear system ``(I - γ P_π) V = R_π`` with
``P_π[s, s'] = Σ_a π(a|s) P(s'|s, a)`` and ``R_π[s] = Σ_a π(a|s) R(s, a)``; then
``Q^π = R + γ P V^π``. The optimal ``Q*`` comes from value iteration
``Q_{k+1} = R + γ P max_a Q_k``, stopped by the contraction bound
``‖Q_{k+1} - Q*‖_∞ ≤ γ/(1-γ) ‖Q_{k+1} - Q_k‖_∞``.
"""

from __future__ import annotations

import numbers

import numpy as np

# validation ------------------------------------------------------------------------------------

def check_gamma(gamma) -> float:
    """``gamma`` as a float in ``[0, 1)`` or a clear error."""
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"gamma must be a real number in [0, 1), got {type(gamma).__name__}")
    gamma = float(gamma)
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma must be in [0, 1), got {gamma}")
    return gamma


def check_policy(policy, n_states: int, n_actions: int, name: str = "policy") -> np.ndarray:
    """An ``(S, A)`` table of action probabilities, from a table or from ``S`` integer actions."""
    if policy is None:
        raise ValueError(f"{name} is required for this target: an (S, A) table of probabilities or S actions")
    arr = np.asarray(policy)
    if arr.ndim == 1:
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name}: a 1-D policy must hold integer actions, got dtype {arr.dtype}")
        if arr.shape[0] != n_states or arr.min(initial=0) < 0 or arr.max(initial=0) >= n_actions:
            raise ValueError(f"{name}: need {n_states} actions in [0, {n_actions}), got {arr.tolist()}")
        return np.eye(n_actions)[arr]
    arr = np.asarray(arr, dtype=float)
    if arr.shape != (n_states, n_actions):
        raise ValueError(f"{name} must have shape ({n_states}, {n_actions}), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name}: probabilities must be finite and non-negative")
    if not np.allclose(arr.sum(-1), 1.0, atol=1e-8):
        raise ValueError(f"{name}: every row must sum to 1 (a distribution over actions), got sums {arr.sum(-1)}")
    return arr


def check_kernel(P, name: str = "P") -> np.ndarray:
    """A transition kernel ``(..., S, A, S)`` whose rows are distributions."""
    P = np.asarray(P, dtype=float)
    if P.ndim < 3 or P.shape[-1] != P.shape[-3]:
        raise ValueError(f"{name} must have shape (..., S, A, S), got {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < 0) or not np.allclose(P.sum(-1), 1.0, atol=1e-8):
        raise ValueError(f"{name}: every P[s, a, :] must be a distribution over next states")
    return P


def check_rewards(R, n_states: int, n_actions: int, name: str = "rewards") -> np.ndarray:
    R = np.asarray(R, dtype=float)
    if R.shape[-2:] != (n_states, n_actions):
        raise ValueError(f"{name} must have shape ({n_states}, {n_actions}), got {R.shape}")
    if not np.all(np.isfinite(R)):
        raise ValueError(f"{name} must be finite")
    return R


# operators -------------------------------------------------------------------------------------

def _expect(P: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``(P V)[..., s, a] = Σ_s' P[..., s, a, s'] V[..., s']``."""
    S, A = P.shape[-3], P.shape[-2]
    flat = P.reshape(*P.shape[:-3], S * A, S)
    return (flat @ V[..., :, None])[..., 0].reshape(*P.shape[:-3], S, A)


def policy_kernel(P: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``P_π[..., s, s'] = Σ_a π(a|s) P[..., s, a, s']``."""
    return np.einsum("...sa,...sat->...st", pi, P)


def policy_evaluation(P, R, pi, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``V^π`` (``(..., S)``) and ``Q^π`` (``(..., S, A)``) by a linear solve.

    Example:
        >>> P = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])      # 2 states, 1 action, self-loops
        >>> V, Q = policy_evaluation(P, np.array([[1.0], [0.0]]), np.ones((2, 1)), 0.5)
        >>> V.round(6).tolist()
        [2.0, 0.0]
    """
    P = np.asarray(P, dtype=float)
    S = P.shape[-1]
    R = np.broadcast_to(np.asarray(R, dtype=float), P.shape[:-1])
    pi = np.broadcast_to(np.asarray(pi, dtype=float), P.shape[:-1])
    r_pi = np.einsum("...sa,...sa->...s", pi, R)
    lhs = np.eye(S) - gamma * policy_kernel(P, pi)
    V = np.linalg.solve(lhs, r_pi[..., None])[..., 0]
    Q = R + gamma * _expect(P, V)
    return V, Q


def _vmax(Q: np.ndarray) -> np.ndarray:
    """``max_a Q[..., a]`` (a loop over the few actions beats a reduction along a tiny axis)."""
    V = Q[..., 0].copy()
    for a in range(1, Q.shape[-1]):
        np.maximum(V, Q[..., a], out=V)
    return V


def value_iteration(P, R, gamma: float, *, tol: float = 1e-10, max_iter: int = 100_000,
                    q0: np.ndarray | None = None, check_every: int = 5) -> np.ndarray:
    """``Q*`` (``(..., S, A)``) by value iteration, to ``tol`` relative to ``max|R|/(1-γ)``.

    Every ``check_every`` sweeps the greedy policy ``π`` of the iterate is evaluated exactly; if ``π``
    is greedy for its own ``Q^π`` (the Bellman optimality equation holds, up to ``tol``) in every batch
    element, ``Q^π = Q*`` is returned at once. Otherwise iteration stops by the contraction bound.
    ``q0`` warm-starts the iteration (e.g. the point estimate for bootstrap replicates).
    """
    P = np.asarray(P, dtype=float)
    R = np.broadcast_to(np.asarray(R, dtype=float), P.shape[:-1])
    scale = max(float(np.max(np.abs(R), initial=0.0)) / (1.0 - gamma), 1e-300)
    if gamma == 0.0:
        return np.array(R, dtype=float)
    Q = np.zeros(P.shape[:-1]) if q0 is None else np.array(np.broadcast_to(q0, P.shape[:-1]), dtype=float)
    for it in range(max_iter):
        if it % check_every == 0:
            pi = greedy(Q)
            Q_pi = policy_evaluation(P, R, pi, gamma)[1]
            gap = _vmax(Q_pi) - np.einsum("...sa,...sa->...s", pi, Q_pi)
            if float(np.max(gap, initial=0.0)) <= tol * scale:
                return Q_pi
        Qn = R + gamma * _expect(P, _vmax(Q))
        diff = float(np.max(np.abs(Qn - Q), initial=0.0))
        Q = Qn
        if gamma / (1.0 - gamma) * diff <= tol * scale:
            return Q
    raise RuntimeError(f"value iteration did not reach tol={tol} in {max_iter} iterations (last change {diff:.3g})")


def greedy(Q: np.ndarray) -> np.ndarray:
    """The greedy deterministic policy of ``Q`` as an ``(..., S, A)`` one-hot table (first maximiser)."""
    Q = np.asarray(Q)
    return np.eye(Q.shape[-1])[Q.argmax(-1)]


def tie_mask(Q: np.ndarray, rtol: float = 1e-8) -> np.ndarray:
    """``(..., S)``: True where two or more actions attain ``max_a Q(s, a)`` within ``rtol·max|Q|``.

    At such states ``max`` is not differentiable, the delta method does not apply and the bootstrap
    of ``Q*`` can be inconsistent; callers report them rather than hide them.
    """
    Q = np.asarray(Q, dtype=float)
    if Q.shape[-1] < 2:
        return np.zeros(Q.shape[:-1], dtype=bool)
    top2 = np.sort(Q, axis=-1)[..., -2:]
    scale = np.maximum(np.max(np.abs(Q), axis=(-2, -1), keepdims=True)[..., 0], 1e-300)
    return (top2[..., 1] - top2[..., 0]) <= rtol * scale


def targets(P, R, gamma: float, target: str, pi: np.ndarray | None = None, q0=None) -> np.ndarray:
    """The downstream target of a kernel: ``"V"`` → ``V^π``, ``"Q"`` → ``Q^π``, ``"Qstar"`` → ``Q*``."""
    if target == "V":
        return policy_evaluation(P, R, pi, gamma)[0]
    if target == "Q":
        return policy_evaluation(P, R, pi, gamma)[1]
    if target == "Qstar":
        return value_iteration(P, R, gamma, q0=q0)
    raise ValueError(f"target must be 'V', 'Q' or 'Qstar', got {target!r}")
