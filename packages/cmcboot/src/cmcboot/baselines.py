"""The paper's baselines: the episodic bootstrap and the plug-in CLT (delta-method) interval.

- :class:`EpisodicBootstrap` resamples whole observed episodes with replacement (``K`` of ``K``),
  re-estimates ``P̂*`` and propagates it like the model-based bootstrap. It needs ``K ≥ 2`` episodes
  and is undefined for a single chain.
- :class:`PluginCLT` is the normal interval ``θ̂ ± z_{1-α/2} se`` with the delta-method variance
  ``se² = Σ_{s,a} ∇_{P(·|s,a)}θᵀ (diag p̂ − p̂p̂ᵀ) ∇_{P(·|s,a)}θ / N(s, a)``: the asymptotic block
  covariance of the count estimator, one block per pair.

Gradients of the Bellman targets with respect to ``P`` (``M = (I − γP_π)^{-1}``):

- ``∂V^π(i)/∂P(s'|s,a) = γ M[i, s] π(a|s) V^π(s')``;
- ``∂Q^π(i,b)/∂P(s'|s,a) = γ (1{(s,a)=(i,b)} + γ Σ_j P(j|i,b) M[j, s] π(a|s)) V^π(s')``;
- ``Q*``: the same as ``Q^π`` at the greedy policy ``π*`` (valid where the optimal action is unique).

Pairs with ``N(s, a) = 0`` contribute no variance (there is nothing to plug in); they are counted.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from cmcboot.bootstrap import UNVISITED, _check_level, _KernelBootstrap, check_size, count_transitions, estimate_kernel
from cmcboot.mdp import check_gamma, check_policy, check_rewards, greedy, policy_kernel, value_iteration

# episodic bootstrap ------------------------------------------------------------------------------

def episodic_bootstrap_counts(episode_counts, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Counts ``(D, B, S, A, S)`` of ``n_boot`` resamples of the ``K`` episodes of each data set.

    ``episode_counts``: ``(D, K, S, A, S)`` counts of every observed episode.
    """
    ec = np.asarray(episode_counts)
    D, K = ec.shape[:2]
    pick = rng.integers(0, K, size=(D * n_boot, K))
    key = (np.arange(D * n_boot)[:, None] * K + pick).ravel()
    W = np.bincount(key, minlength=D * n_boot * K).reshape(D, n_boot, K).astype(float)
    flat = ec.reshape(D, K, -1).astype(float)
    return np.rint(W @ flat).astype(np.int32).reshape(D, n_boot, *ec.shape[2:])


class EpisodicBootstrap(_KernelBootstrap):
    """Bootstrap by resampling whole episodes (the baseline). Same ``fit``/``interval`` API as ModelBootstrap."""

    def __init__(self, n_boot: int = 1000, seed: int | None = None, unvisited: str = "uniform",
                 n_states: int | None = None, n_actions: int | None = None):
        self.n_boot = n_boot
        self.seed = seed
        self.unvisited = unvisited
        self.n_states = n_states
        self.n_actions = n_actions
        self._check_params()

    def fit(self, trajectories):
        data = self._fit_data(trajectories)
        if data["episode_counts"].shape[0] < 2:
            raise ValueError("the episodic bootstrap needs at least 2 episodes (trajectories); "
                             "it is undefined for a single chain")
        rng = np.random.default_rng(self.seed)
        self._set_replicates(episodic_bootstrap_counts(data["episode_counts"][None], int(self.n_boot), rng)[0])
        return self


# plug-in CLT -------------------------------------------------------------------------------------

def _coefficients(P, pi, gamma, target):
    """``coef[..., out, s, a]`` with ``∂θ_out/∂P(s'|s,a) = coef[..., out, s, a] · V(s')``."""
    S = P.shape[-1]
    M = np.linalg.inv(np.eye(S) - gamma * policy_kernel(P, pi))
    c = gamma * M[..., :, :, None] * pi[..., None, :, :]                       # (..., i, s, a)
    if target == "V":
        return c.reshape(*c.shape[:-3], S, S, pi.shape[-1])
    A = pi.shape[-1]
    d = gamma * np.einsum("...ibj,...jsa->...ibsa", P, c)
    d = d + gamma * np.eye(S * A).reshape(S, A, S, A)
    return d.reshape(*d.shape[:-4], S * A, S, A)


def _point(P, R, pi, gamma, target):
    S = P.shape[-1]
    r_pi = np.einsum("...sa,...sa->...s", pi, np.broadcast_to(R, P.shape[:-1]))
    V = np.linalg.solve(np.eye(S) - gamma * policy_kernel(P, pi), r_pi[..., None])[..., 0]
    Q = R + gamma * np.einsum("...sat,...t->...sa", P, V)
    return V, Q


def bellman_gradient(P, R, gamma: float, target: str, pi=None) -> np.ndarray:
    """Full gradient ``∂θ/∂P``: ``(..., S, S, A, S)`` for ``V``; ``(..., S, A, S, A, S)`` for ``Q``/``Qstar``."""
    P = np.asarray(P, float)
    S, A = P.shape[-3], P.shape[-2]
    if target == "Qstar":
        pi = greedy(value_iteration(P, R, gamma))
    V, _ = _point(P, R, pi, gamma, target)
    coef = _coefficients(P, np.broadcast_to(pi, P.shape[:-1]), gamma, "V" if target == "V" else "Q")
    g = coef[..., None] * V[..., None, None, None, :]
    return g if target == "V" else g.reshape(*g.shape[:-4], S, A, S, A, S)


def delta_method(P, counts_sa, R, gamma: float, target: str, pi=None) -> tuple[np.ndarray, np.ndarray]:
    """Plug-in estimate and delta-method standard error, batched over leading dims of ``P``.

    Args:
        P: estimated kernels ``(..., S, A, S)``; counts_sa: ``N(s, a)`` ``(..., S, A)``.
        target: ``"V"``, ``"Q"`` or ``"Qstar"`` (then ``pi`` is the greedy policy of ``Q̂*``).
    Returns:
        ``(estimate, se)``, each ``(..., S)`` or ``(..., S, A)``.
    """
    P = np.asarray(P, float)
    S, A = P.shape[-3], P.shape[-2]
    R = np.asarray(R, float)
    if target == "Qstar":
        qstar = value_iteration(P, R, gamma)
        pi = greedy(qstar)
    pi = np.broadcast_to(pi, P.shape[:-1])
    V, Q = _point(P, R, pi, gamma, target)
    var_next = np.einsum("...sat,...t->...sa", P, V ** 2) - np.einsum("...sat,...t->...sa", P, V) ** 2
    n = np.asarray(counts_sa, float)
    w = np.where(n > 0, np.maximum(var_next, 0.0) / np.maximum(n, 1), 0.0)
    coef = _coefficients(P, pi, gamma, "V" if target == "V" else "Q")
    var = np.einsum("...osa,...sa->...o", coef ** 2, w)
    se = np.sqrt(var)
    if target == "V":
        return V, se
    est = qstar if target == "Qstar" else Q
    return est, se.reshape(*se.shape[:-1], S, A)


class PluginCLT:
    """Plug-in CLT interval ``θ̂ ± z se`` with the delta-method standard error (the baseline).

    Same ``fit``/``interval`` API as :class:`cmcboot.ModelBootstrap` (``method`` is always normal).
    """

    def __init__(self, unvisited: str = "uniform", n_states: int | None = None, n_actions: int | None = None):
        self.unvisited = unvisited
        self.n_states = n_states
        self.n_actions = n_actions
        self._check_params()

    def _check_params(self) -> None:
        if self.unvisited not in UNVISITED:
            raise ValueError(f"unvisited must be one of {UNVISITED}, got {self.unvisited!r}")
        check_size(self.n_states, "n_states")
        check_size(self.n_actions, "n_actions")

    def fit(self, trajectories):
        self._check_params()
        data = count_transitions(trajectories, self.n_states, self.n_actions)
        for name, value in (("n_states", self.n_states), ("n_actions", self.n_actions)):
            if value is None:
                warnings.warn(f"{name} inferred from the data as {data[name]} (the largest one seen + 1); "
                              f"pass {name}= to fix it", stacklevel=2)
        self.unreached_states_ = np.flatnonzero(~data["reached"])
        self.n_states_, self.n_actions_ = data["n_states"], data["n_actions"]
        self.counts_ = data["counts"]
        self.P_hat_, self.unvisited_ = estimate_kernel(self.counts_, self.unvisited)
        self.n_unvisited_ = int(self.unvisited_.sum())
        self.rewards_ = None
        if data["reward_sum"] is not None:
            self.rewards_ = data["reward_sum"] / np.maximum(data["reward_n"], 1)
        return self

    def interval(self, target: str = "V", policy=None, rewards=None, gamma: float = 0.9, level: float = 0.95,
                 log: bool = False):
        """``(lower, upper)`` for ``V^π``, ``Q^π`` or ``Q*`` (see :meth:`cmcboot.ModelBootstrap.interval`)."""
        if not hasattr(self, "P_hat_"):
            raise RuntimeError("PluginCLT is not fitted: call fit(trajectories) first")
        if target not in ("V", "Q", "Qstar"):
            raise ValueError(f"target must be 'V', 'Q' or 'Qstar', got {target!r}")
        gamma, level = check_gamma(gamma), _check_level(level)
        if rewards is None:
            if self.rewards_ is None:
                raise ValueError("rewards is required: the data carry no reward column; pass an (S, A) table")
            rewards = self.rewards_
        R = check_rewards(rewards, self.n_states_, self.n_actions_)
        pi = None if target == "Qstar" else check_policy(policy, self.n_states_, self.n_actions_)
        est, se = delta_method(self.P_hat_, self.counts_.sum(-1), R, gamma, target, pi)
        h = stats.norm.ppf(0.5 + level / 2) * se
        if log:
            return est - h, est + h, {"estimate": est, "se": se, "n_unvisited": self.n_unvisited_}
        return est - h, est + h


# per-replicate loop (the speed baseline of the bench) -----------------------------------------------

def loop_bootstrap_counts(P, pi, starts, lengths, n_boot: int, rng: np.random.Generator, *,
                          resample_starts: bool = False) -> np.ndarray:
    """The model-based bootstrap counts ``(B, S, A, S)`` for one data set, one replicate at a time.

    A plain Python loop over replicates and steps (``bisect`` on the joint CDF of ``(a, s')``): the
    same law as :func:`cmcboot.bootstrap.simulate_counts`, used as the reference of the speed benchmark.
    """
    import bisect

    P, pi = np.asarray(P, float), np.asarray(pi, float)
    S, A = P.shape[0], P.shape[1]
    joint = (pi[..., None] * P).reshape(S, A * S)
    cdf = [list(np.cumsum(row) / row.sum()) for row in joint]
    starts = [int(s) for s in np.asarray(starts)]
    lengths = [int(n) for n in np.asarray(lengths)]
    out = np.zeros((n_boot, S * A * S), dtype=np.int64)
    last = A * S - 1
    for b in range(n_boot):
        counts = [0] * (S * A * S)
        for k, n in enumerate(lengths):
            s = starts[int(rng.integers(len(starts)))] if resample_starts else starts[k]
            for u in rng.random(n).tolist():
                j = min(bisect.bisect_right(cdf[s], u), last)
                counts[s * A * S + j] += 1
                s = j % S
        out[b] = counts
    return out.reshape(n_boot, S, A, S)
