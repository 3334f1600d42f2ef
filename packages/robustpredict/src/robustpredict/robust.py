"""Follow-the-prediction and the ε-robust policy around any black-box predictor.

Paper: *Robustified follow-the-prediction for contextual optimization* (NeurIPS 2026; only the
abstract is public). What follows is derived in this package from the abstract's description.

**Bound (derived here).** For the three problems of :mod:`robustpredict.problems`, write
``e = y - ŷ``. The regret of the robust action is, per decision,

    regret <= G(ε) + L·(|e| - ε)_+ + J·1[|e| > ε],     G(ε) = 2ε  (the robust optimization gap).

Taking expectations with ``(t - ε)_+ <= t²/(4ε)`` and Markov's inequality ``P(|e| > ε) <= η²/ε²``
(η: the predictor's RMSE) gives

    E[regret] <= B(η, ε) = G(ε) + L·η²/(4ε) + J·η²/ε².

Minimising over ε: ``2ε³ - (L/4)η²ε - 2Jη² = 0`` (one positive root, solved in closed form by
Cardano), ``ε ≈ (Jη²)^{1/3}`` and ``B ≈ 3·J^{1/3}·η^{2/3} = O(η^{2/3})``. The same inequalities hold
for an empirical distribution, so on any test set the mean regret is below ``B`` evaluated at the
test set's RMSE — a check of the code, which the tests and the ``paper`` experiment make.
"""

from __future__ import annotations

import numpy as np

from robustpredict.problems import DecisionProblem, as_epsilon, as_predictions

# predictors -----------------------------------------------------------------------------------


def predict(predictor, X) -> np.ndarray:
    """Predictions of a callable or a scikit-learn estimator (``.predict``) as a 1-D array."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (contexts x features), got shape {X.shape}")
    if hasattr(predictor, "predict"):
        y = predictor.predict(X)
    elif callable(predictor):
        y = predictor(X)
    else:
        raise TypeError(f"predictor must be callable or have .predict, got {type(predictor).__name__}")
    y = np.asarray(y, dtype=float)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.shape != (X.shape[0],):
        raise ValueError(f"predictor returned shape {y.shape}, expected ({X.shape[0]},) (one state per context)")
    if not np.all(np.isfinite(y)):
        raise ValueError("predictor returned NaN or inf predictions")
    return y


def _check_problem(problem) -> DecisionProblem:
    if not isinstance(problem, DecisionProblem):
        raise TypeError(f"problem must be a DecisionProblem, got {type(problem).__name__}")
    return problem


def _states(y, n: int, problem: DecisionProblem | None = None) -> np.ndarray:
    y = as_predictions(y, "y") if problem is None else problem.check_states(y, "y")
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} states but X has {n} contexts")
    return y


# η estimators, ε and the bound ------------------------------------------------------------------


def estimate_eta(residuals, method: str = "rmse", alpha: float = 0.1) -> float:
    """Estimate the predictor's error scale η from held-out residuals ``y - ŷ``.

    * ``"rmse"``: ``sqrt(mean(r²))``, the RMSE the bound is stated in.
    * ``"conformal"``: the split-conformal ``(1 - α)`` quantile of ``|r|``
      (order statistic ``⌈(n + 1)(1 - α)⌉``), a more conservative radius.
    """
    r = as_predictions(residuals, "residuals")
    if r.size < 2:
        raise ValueError(f"residuals must hold at least 2 values, got {r.size}")
    if method == "rmse":
        return float(np.sqrt(np.mean(r**2)))
    if method == "conformal":
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        k = min(int(np.ceil((r.size + 1) * (1 - alpha))), r.size)
        return float(np.sort(np.abs(r))[k - 1])
    raise ValueError(f"method must be 'rmse' or 'conformal', got {method!r}")


def theoretical_bound(eta, epsilon, *, jump: float, lipschitz: float = 1.0, gap_slope: float = 2.0):
    """``B(η, ε) = g·ε + L·η²/(4ε) + J·η²/ε²`` (module docstring); ``inf`` at ε = 0 unless η = 0."""
    eta, eps = np.asarray(eta, dtype=float), np.asarray(as_epsilon(epsilon), dtype=float)
    if np.any(eta < 0):
        raise ValueError(f"eta must be >= 0, got {eta}")
    with np.errstate(divide="ignore", invalid="ignore"):
        b = gap_slope * eps + lipschitz * eta**2 / (4 * eps) + jump * eta**2 / eps**2
    b = np.where(eta == 0, gap_slope * eps, b)
    return float(b) if b.ndim == 0 else b


def epsilon_for(eta, *, jump: float, lipschitz: float = 1.0, gap_slope: float = 2.0):
    """The ε minimising :func:`theoretical_bound`: the positive root of
    ``g·ε³ - (L/4)η²·ε - 2Jη² = 0`` (Cardano / trigonometric form)."""
    eta = np.asarray(eta, dtype=float)
    if np.any(~np.isfinite(eta)) or np.any(eta < 0):
        raise ValueError(f"eta must be finite and >= 0, got {eta}")
    if not np.isfinite(jump) or jump < 0:
        raise ValueError(f"jump must be finite and >= 0, got {jump}")
    # depressed cubic t³ + P t + Q = 0
    P = -lipschitz * eta**2 / (4 * gap_slope)
    Q = -2 * jump * eta**2 / gap_slope
    disc = (Q / 2) ** 2 + (P / 3) ** 3
    with np.errstate(invalid="ignore", divide="ignore"):
        one = np.cbrt(-Q / 2 + np.sqrt(np.maximum(disc, 0))) + np.cbrt(-Q / 2 - np.sqrt(np.maximum(disc, 0)))
        m = 2 * np.sqrt(np.maximum(-P / 3, 0))
        arg = np.clip(3 * Q / (P * m + (m == 0)) , -1, 1)
        three = m * np.cos(np.arccos(arg) / 3)
    eps = np.where(disc >= 0, one, three)
    eps = np.where(eta == 0, 0.0, eps)
    return float(eps) if eps.ndim == 0 else eps


def robust_gap(problem: DecisionProblem, epsilon, y_hat, n_states: int = 257) -> float:
    """Robust optimization gap ``G(ε) = sup_ŷ max_{y ∈ B_ε(ŷ)} [L(a_ε(ŷ), y) - L*(y)]``,
    the sup taken over the given predictions ``y_hat`` (numerically, on a state grid)."""
    _check_problem(problem)
    return float(np.max(problem.robust_value(y_hat, epsilon, n_states=n_states)))


# policies ---------------------------------------------------------------------------------------


class FollowThePrediction:
    """FTP: act optimally for the predicted state, ``a = argmin_a L(a, ŷ(x))``.

    Args:
        problem: a :class:`~robustpredict.problems.DecisionProblem`.
        predictor: a callable ``X -> ŷ`` or a fitted scikit-learn regressor.
    """

    def __init__(self, problem: DecisionProblem, predictor):
        self.problem = _check_problem(problem)
        if not (callable(predictor) or hasattr(predictor, "predict")):
            raise TypeError(f"predictor must be callable or have .predict, got {type(predictor).__name__}")
        self.predictor = predictor

    def predict(self, X) -> np.ndarray:
        return predict(self.predictor, X)

    def act_on(self, y_hat) -> np.ndarray:
        """Actions for given predictions."""
        return self.problem.ftp_action(y_hat)

    def act(self, X) -> np.ndarray:
        """Actions for contexts ``X`` of shape ``(n, d)``; returns shape ``(n,)``."""
        return self.act_on(self.predict(X))


class RobustPolicy(FollowThePrediction):
    """ε-robust policy: ``a = argmin_a max_{|y - ŷ(x)| <= ε} L(a, y)``.

    Args:
        problem: a :class:`~robustpredict.problems.DecisionProblem` (closed form for the paper's
            three problems, generic numerical min–max otherwise).
        predictor: a callable ``X -> ŷ`` or a fitted scikit-learn regressor.
        epsilon: a radius ``>= 0``, or ``"auto"``: ``ε = epsilon_for(η)``, the minimiser of the
            bound, with η from ``eta`` or estimated by :meth:`fit` on held-out data.
        eta: a known RMSE (``"auto"`` only; supplying the true η is the *oracle* variant).
        eta_method: ``"rmse"`` or ``"conformal"`` (see :func:`estimate_eta`).
        alpha: miscoverage of the conformal estimator.

    Example:
        >>> import numpy as np
        >>> from robustpredict import PostedPricing, RobustPolicy
        >>> pol = RobustPolicy(PostedPricing(), lambda X: X[:, 0], epsilon=0.5)
        >>> pol.act(np.array([[3.0], [4.0]]))
        array([2.5, 3.5])
    """

    def __init__(self, problem: DecisionProblem, predictor, epsilon="auto", *, eta: float | None = None,
                 eta_method: str = "rmse", alpha: float = 0.1):
        super().__init__(problem, predictor)
        if isinstance(epsilon, str):
            if epsilon != "auto":
                raise ValueError(f"epsilon must be 'auto' or a number >= 0, got {epsilon!r}")
        else:
            epsilon = as_epsilon(epsilon)
            if np.ndim(epsilon):
                raise ValueError("epsilon must be a scalar")
        if eta is not None and (not np.isfinite(eta) or eta < 0):
            raise ValueError(f"eta must be finite and >= 0, got {eta}")
        if eta_method not in ("rmse", "conformal"):
            raise ValueError(f"eta_method must be 'rmse' or 'conformal', got {eta_method!r}")
        self.epsilon, self.eta, self.eta_method, self.alpha = epsilon, eta, eta_method, alpha
        self.jump_ = None
        self.eta_ = eta
        self.epsilon_ = None if epsilon == "auto" else float(epsilon)

    def fit(self, X, y) -> RobustPolicy:
        """Estimate η from held-out ``(X, y)`` (never the data the predictor was trained on),
        and the jump ``J`` where the problem needs data for it; set ``epsilon_``."""
        y_hat = self.predict(X)
        y = _states(y, y_hat.size, self.problem)
        if self.eta is None:
            self.eta_ = estimate_eta(y - y_hat, self.eta_method, self.alpha)
        self.jump_ = self.problem.jump(y)
        if self.epsilon == "auto":
            self.epsilon_ = self._auto_epsilon()
        return self

    def _auto_epsilon(self) -> float:
        if self.jump_ is None:
            self.jump_ = self.problem.jump(None)
        if not np.isfinite(self.jump_):
            raise ValueError("epsilon='auto' needs a finite jump J: give the problem one or pass a number")
        return epsilon_for(self.eta_, jump=self.jump_, lipschitz=self.problem.lipschitz,
                           gap_slope=self.problem.gap_slope)

    def act_on(self, y_hat) -> np.ndarray:
        if self.epsilon_ is None:
            if self.eta_ is None:
                raise RuntimeError("epsilon='auto' without eta: call fit(X_heldout, y_heldout) first")
            self.epsilon_ = self._auto_epsilon()
        return self.problem.robust_action(y_hat, self.epsilon_)


def excess_loss(policy, X, y, *, per_decision: bool = False):
    """Mean regret ``E[L(π(x), y) - min_a L(a, y)]`` of ``policy`` on ``(X, y)``
    (``per_decision=True``: the array of regrets)."""
    if not hasattr(policy, "act") or not hasattr(policy, "problem"):
        raise TypeError(f"policy must have .act and .problem, got {type(policy).__name__}")
    a = policy.act(X)
    y = _states(y, a.size, policy.problem)
    r = policy.problem.regret(a, y)
    return r if per_decision else float(np.mean(r))
