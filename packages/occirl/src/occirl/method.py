"""The occupancy-space natural-gradient reward update (and the shared IRL estimator machinery).

The MCE-IRL dual ``g(r) = p0·V_r - <d_E, r>`` has gradient ``∇g(r) = d_π_r - d_E`` and Hessian ``F(r)``
(the Fisher information of the occupancy family, :func:`occirl.mdp.occupancy_jacobian`). If the
target reward ``r*`` is soft-optimal for the expert (``d_π_r* = d_E``), the fundamental theorem of
calculus along the straight reward path ``r* + t (r_k - r*)`` (an e-geodesic of the occupancy family)
gives ``d_π_rk - d_E = F̄ (r_k - r*)`` with ``F̄ = ∫_0^1 F(r* + t(r_k - r*)) dt``. The natural-gradient
step ``r_k - η F̄⁺ ∇g(r_k)`` is therefore (up to F̄'s null space, the potential-shaping directions,
which leave the policy unchanged) the convex interpolation::

    r_{k+1} = (1 - η) r_k + η r*,   r* = log π̂_E(a|s)

Under maximum causal entropy ``r = log π_E`` makes π_E soft-optimal (``V ≡ 0``). With linear features
``r = Φθ`` the target is the d_E-weighted least-squares projection of ``log π̂_E`` on the features.

**Inferred from the abstract** (no paper text or code is public): the target ``log π_E``, the path
(straight in reward space), the smoothing of unvisited actions and the feature projection.
"""

from __future__ import annotations

import json

import numpy as np

from occirl.mdp import _occ, _soft_vi, empirical_occupancy, expert_policy, occupancy_jacobian, occupancy_mass
from paperworks.utils import check_float, check_int

__all__ = ["OccupancyNaturalGradientIRL", "mirror_descent_policy", "projection_target", "quadrature_step"]


def mirror_descent_policy(pi, pi_E, eta):
    """Entropic mirror descent on the policy: ``π_{k+1}(·|s) ∝ π_k(·|s)^{1-η} π_E(·|s)^η``."""
    eta = check_float(eta, "eta", minimum=0.0, maximum=1.0)
    logp = (1 - eta) * np.log(np.clip(pi, 1e-300, None)) + eta * np.log(np.clip(pi_E, 1e-300, None))
    logp -= logp.max(-1, keepdims=True)
    p = np.exp(logp)
    return p / p.sum(-1, keepdims=True)


def projection_target(features, d_E, log_pi_E):
    """``θ* = argmin_θ Σ d_E(s,a) (φ(s,a)·θ - log π̂_E(a|s))²`` (minimum-norm solution)."""
    Phi = features.reshape(-1, features.shape[-1])
    w = np.sqrt(d_E.ravel() / d_E.sum())
    theta, *_ = np.linalg.lstsq(w[:, None] * Phi, w * log_pi_E.ravel(), rcond=None)
    return theta


def quadrature_step(P, p0, r, r_target, d_E, eta, *, gamma, horizon=None, points=16, rcond=1e-9):
    """The natural-gradient step with the Fisher averaged by Gauss–Legendre quadrature (the check).

    ``r - η F̄⁺ (d_π_r - d_E)``, ``F̄ = Σ_i w_i F(r* + t_i (r - r*))``; equals the interpolation
    ``(1-η) r + η r*`` up to F̄'s null space when ``d_π_r* = d_E``.
    """
    t, w = np.polynomial.legendre.leggauss(check_int(points, "points"))
    t, w = (t + 1) / 2, w / 2
    Fbar = sum(wi * occupancy_jacobian(P, r_target + ti * (r - r_target), p0, gamma=gamma, horizon=horizon)
               for ti, wi in zip(t, w))
    _, _, pi = _soft_vi(P, r, gamma, horizon)
    grad = (_occ(P, pi, p0, gamma, horizon) - d_E).ravel()
    step, *_ = np.linalg.lstsq(Fbar, grad, rcond=rcond)
    return r - eta * step.reshape(r.shape)


class _TabularIRL:
    """Shared machinery: env reading, demonstrations, the fit loop, history, save/load."""

    _kind = "base"

    def __init__(self, env, *, features=None, max_iter=500, tol=1e-4):
        env = getattr(env, "unwrapped", env)
        for attr in ("transition_matrix", "initial_state_dist"):
            if not hasattr(env, attr):
                raise TypeError(f"env must expose seals' tabular attribute {attr!r} (e.g. an occirl env)")
        self.env = env
        self.P = np.asarray(env.transition_matrix, dtype=float)
        self.p0 = np.asarray(env.initial_state_dist, dtype=float)
        gamma = float(getattr(env, "gamma", 1.0))
        horizon = getattr(env, "horizon", None)
        # estimators read γ from the environment: γ < 1 → discounted, γ = 1 → finite horizon
        self.gamma = check_float(gamma, "env.gamma", minimum=0.0, maximum=1.0)
        self.horizon = None if self.gamma < 1 else check_int(int(horizon), "env.horizon")
        S, A = self.P.shape[:2]
        if features is not None:
            features = np.asarray(features, dtype=float)
            if features.ndim != 3 or features.shape[:2] != (S, A):
                raise ValueError(f"features must have shape (S, A, k) with (S, A) = {(S, A)}, got {features.shape}")
            if not np.all(np.isfinite(features)):
                raise ValueError("features must be finite (found NaN or inf)")
        self.features = features
        self.max_iter = check_int(max_iter, "max_iter")
        self.tol = check_float(tol, "tol", minimum=0.0)

    # helpers --------------------------------------------------------------------------------------
    @property
    def _Phi(self):
        S, A = self.P.shape[:2]
        return np.eye(S * A).reshape(S, A, S * A) if self.features is None else self.features

    def _expert_occupancy(self, demonstrations):
        S, A = self.P.shape[:2]
        if isinstance(demonstrations, np.ndarray) and demonstrations.shape == (S, A) \
                and np.issubdtype(demonstrations.dtype, np.floating):
            d = demonstrations.astype(float)
            if np.any(d < 0) or not np.all(np.isfinite(d)):
                raise ValueError("an expert occupancy must be finite and non-negative")
            return d
        return empirical_occupancy(demonstrations, S, A, gamma=self.gamma if self.horizon is None else 1.0,
                                   horizon=self.horizon)

    def _solve(self, r):
        warm = getattr(self, "_V", None) if self.horizon is None else None
        V, _, pi = _soft_vi(self.P, r, self.gamma, self.horizon, V_init=warm)  # warm start: same fixed point
        self._V = V
        return pi, _occ(self.P, pi, self.p0, self.gamma, self.horizon)

    # fit ------------------------------------------------------------------------------------------
    def fit(self, demonstrations):
        """Fit on a list of ``(T, 2)`` (state, action) trajectories or an expert occupancy ``(S, A)``."""
        d_E = self._expert_occupancy(demonstrations)
        mass = occupancy_mass(self.gamma, self.horizon)
        if abs(d_E.sum() - mass) > 1e-6 * mass:
            d_E = d_E * (mass / d_E.sum())  # trajectories shorter than the horizon: renormalise (imitation #414)
        self.d_E_ = d_E
        Phi = self._Phi
        theta = self._init(d_E)
        hist = {"dual": [], "nll": [], "l1": [], "solves": [], "policy_change": []}
        prev, self._V = None, None
        self.converged_ = False
        for k in range(self.max_iter):
            r = Phi @ theta
            if not np.all(np.isfinite(r)) or np.abs(r).max() > 1e8:
                raise FloatingPointError(f"{type(self).__name__}.fit diverged at step {k}: |reward| = "
                                         f"{np.abs(r).max():.3g} (lower the step size)")
            pi, d = self._solve(r)
            pim = pi.mean(0) if pi.ndim == 3 else pi
            change = np.inf if prev is None else float(np.max(np.abs(pi - prev)))
            hist["dual"].append(self._dual_from(pi, d, r, d_E))
            hist["nll"].append(float(-np.sum(d_E * np.log(np.clip(pim, 1e-300, None))) / d_E.sum()))
            hist["l1"].append(float(np.abs(d - d_E).sum()))
            hist["solves"].append(k + 1)
            hist["policy_change"].append(change)
            if change < self.tol:
                self.converged_ = True
                break
            prev = pi
            theta = self._update(k, theta, r, pi, d, d_E)
        self.theta_, self.reward_, self.policy_ = theta, Phi @ theta, pi
        self.history_ = {k: np.asarray(v) for k, v in hist.items()}
        self.n_iter_ = len(hist["solves"])
        return self

    def _dual_from(self, pi, d, r, d_E):
        # p0·V = <d_π, r - log π> (soft Bellman identity), so no second solve is needed
        if pi.ndim == 3:
            D = np.zeros((self.horizon, self.P.shape[0]))
            D[0] = self.p0
            Pf = self.P.reshape(-1, self.P.shape[2])
            for t in range(self.horizon - 1):
                D[t + 1] = self.gamma * ((D[t][:, None] * pi[t]).ravel() @ Pf)
            ent = -np.einsum("ts,tsa->", D, pi * np.log(np.clip(pi, 1e-300, None)))
            return float(np.sum(d * r) + ent - np.sum(d_E * r))
        return float(np.sum(d * (r - np.log(np.clip(pi, 1e-300, None)))) - np.sum(d_E * r))

    # save / load ----------------------------------------------------------------------------------
    def _params(self) -> dict:
        return {}

    def save(self, path):
        """One self-contained ``.npz`` (MDP, features, fitted reward, policy, history; no pickle)."""
        if not hasattr(self, "reward_"):
            raise RuntimeError("fit the estimator before saving it")
        meta = json.dumps({"kind": self._kind, "params": self._params(), "gamma": self.gamma,
                           "horizon": self.horizon, "max_iter": self.max_iter, "tol": self.tol,
                           "converged": bool(self.converged_)})
        arrays = {"P": self.P, "p0": self.p0, "theta": self.theta_, "reward": self.reward_,
                  "policy": self.policy_, "d_E": self.d_E_, "meta": np.array(meta)}
        if self.features is not None:
            arrays["features"] = self.features
        arrays.update({f"history_{k}": v for k, v in self.history_.items()})
        with open(path, "wb") as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path):
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta["kind"] != cls._kind:
                raise ValueError(f"{path} holds a {meta['kind']!r} model, not {cls._kind!r}")
            from occirl.envs import TabularMDPEnv

            S, A = z["P"].shape[:2]
            env = TabularMDPEnv(z["P"], np.zeros((S, A)), gamma=meta["gamma"], p0=z["p0"],
                                horizon=meta["horizon"] or 100)
            est = cls(env, features=z["features"] if "features" in z else None, max_iter=meta["max_iter"],
                      tol=meta["tol"], **meta["params"])
            est.theta_, est.reward_, est.policy_, est.d_E_ = z["theta"], z["reward"], z["policy"], z["d_E"]
            est.history_ = {k[8:]: z[k] for k in z.files if k.startswith("history_")}
            est.converged_ = meta["converged"]
            est.n_iter_ = len(est.history_["solves"])
        return est


class OccupancyNaturalGradientIRL(_TabularIRL):
    """Occupancy-space natural-gradient IRL: ``r_{k+1} = (1-η) r_k + η r*`` (see the module docstring).

    Args:
        env: a tabular env with seals' attributes (``occirl/GridWorld-v0``, ``Garnet-v0``, ``TabularMDP-v0``).
        features: ``(S, A, k)`` linear features, or ``None`` for a tabular reward.
        step_size: η in (0, 1]. fisher: ``"closed_form"`` (the interpolation) or ``"quadrature"``
            (tabular only: the Fisher-preconditioned dual gradient, Fisher integrated by 16-point
            Gauss–Legendre along the path; the numerical check of the theorem).
        smoothing: ε in [0, 1): ``π̂_E = (1-ε) d_E/Σ_a d_E + ε/A`` in visited states; uniform where unvisited.
        max_iter: soft-VI solves at most; tol: stop when ``max |π_k - π_{k-1}| < tol``.

    Attributes (after ``fit``): ``reward_`` ``(S, A)``, ``policy_``, ``theta_``, ``target_``,
    ``history_`` (``dual``, ``nll``, ``l1`` = ‖d_π - d_E‖₁, ``solves``, ``policy_change``).

    Example:
        >>> import gymnasium as gym, occirl
        >>> env = gym.make("occirl/Garnet-v0", n_states=10, seed=1)
        >>> # est = occirl.OccupancyNaturalGradientIRL(env).fit(trajectories)
    """

    _kind = "occupancy_natural_gradient"

    def __init__(self, env, *, features=None, step_size=0.5, fisher="closed_form", smoothing=0.01,
                 max_iter=500, tol=1e-4):
        super().__init__(env, features=features, max_iter=max_iter, tol=tol)
        self.step_size = check_float(step_size, "step_size", minimum=0.0, maximum=1.0, open_minimum=True)
        if fisher not in ("closed_form", "quadrature"):
            raise ValueError(f"fisher must be 'closed_form' or 'quadrature', got {fisher!r}")
        if fisher == "quadrature" and features is not None:
            raise ValueError("fisher='quadrature' is the tabular check of the theorem; use features=None")
        self.fisher = fisher
        self.smoothing = check_float(smoothing, "smoothing", minimum=0.0, maximum=1.0, open_maximum=True)

    def _params(self):
        return {"step_size": self.step_size, "fisher": self.fisher, "smoothing": self.smoothing}

    def target_reward(self, d_E):
        """``log π̂_E`` (smoothed), the tabular target."""
        A = d_E.shape[-1]
        pi = (1 - self.smoothing) * expert_policy(d_E) + self.smoothing / A
        return np.log(pi)

    def _init(self, d_E):
        log_pi = self.target_reward(d_E)
        if self.features is None:
            self.target_ = log_pi.ravel()
        else:
            self.target_ = projection_target(self.features, d_E, log_pi)
        return np.zeros(self._Phi.shape[-1])

    def _update(self, k, theta, r, pi, d, d_E):
        if self.fisher == "closed_form":
            return (1 - self.step_size) * theta + self.step_size * self.target_
        r_new = quadrature_step(self.P, self.p0, r, self.target_.reshape(r.shape), d_E, self.step_size,
                                gamma=self.gamma, horizon=self.horizon)
        return r_new.ravel()
