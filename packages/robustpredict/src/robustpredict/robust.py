"""Follow-the-prediction and the ε-robust policy around any black-box predictor.

Paper: *Robustified follow-the-prediction for contextual optimization* (NeurIPS 2026; only the
abstract is public). What follows is derived in this package from the abstract's description.

**Bound (derived here).** Write ``e = y - ŷ``. For a problem with robust optimization gap
``G(ε) = g·ε``, regret growing at most ``L`` per unit of error beyond the ball and a jump ``J``
(the three problems of :mod:`robustpredict.problems`: ``g = 2``, ``L = 1``), per decision

    regret <= g·ε + L·(|e| - ε)_+ + J·1[|e| > ε].

Taking expectations with ``(t - ε)_+ <= t²/(4ε)`` and Markov's inequality ``P(|e| > ε) <= η²/ε²``
(η: the predictor's RMSE) gives

    E[regret] <= B(η, ε) = g·ε + L·η²/(4ε) + J·η²/ε².

Minimising over ε: ``g·ε³ - (L/4)η²ε - 2Jη² = 0`` (one positive root, solved in closed form by
Cardano), ``ε ≈ (2Jη²/g)^{1/3}`` and ``B = O(η^{2/3})``.

**Choosing ε.** :class:`RobustPolicy` takes ε as a number or learns it from held-out data:

* ``"auto"``: the minimiser of ``B`` at the held-out RMSE (the paper's rule, as derived here);
* ``"conformal"``: the minimiser of the same per-decision bound with the error's tail and overshoot
  estimated from the held-out residuals, ``g·ε + L·mean((|r| - ε)_+) + J·(#{|r| > ε} + 1)/(n + 1)``
  (the split-conformal upper estimate of ``P(|e_new| > ε)``): ε is a conformal quantile of ``|r|``
  at the level the bound prefers, instead of Markov's worst case;
* ``"cv"``: K-fold cross-validated held-out regret over the same grid :class:`FixedShading` searches
  (:func:`shade_grid`). With a fixed predictor nothing is fitted inside a fold, so this selects the
  same shade as :class:`~robustpredict.baselines.FixedShading` on the same data: it is the tuned shade
  in the policy's own API (and what ``GridSearchCV`` over ``epsilon`` returns).

The policies are scikit-learn estimators: ``fit(X_heldout, y_heldout)``, ``predict(X)`` returns the
actions, ``score(X, y)`` the negative mean regret, so ``clone``, ``GridSearchCV`` and ``Pipeline``
work. The predictor is a black box fitted beforehand: ``clone`` shares it and ``fit`` never refits it.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted, validate_data

from robustpredict.problems import DecisionProblem, as_epsilon, as_predictions

EPSILON_RULES = ("auto", "conformal", "cv")

# predictors -----------------------------------------------------------------------------------


def _predictor_ok(predictor) -> None:
    if not (callable(predictor) or hasattr(predictor, "predict")):
        raise TypeError(f"predictor must be callable or have .predict, got {type(predictor).__name__}")
    if isinstance(predictor, BaseEstimator) and hasattr(predictor, "fit"):
        try:
            check_is_fitted(predictor)
        except NotFittedError as err:
            raise ValueError(f"predictor {type(predictor).__name__} is not fitted: fit it on training data "
                             "first (the policy never trains the predictor)") from err


def predict(predictor, X) -> np.ndarray:
    """Predictions of a callable or a scikit-learn estimator (``.predict``) as a 1-D float array."""
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    if len(X.shape) != 2:
        raise ValueError(f"X must be 2-D (contexts x features), got shape {tuple(X.shape)}")
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


def _constant(name: str, value, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value}")
    return v


def theoretical_bound(eta, epsilon, *, jump: float, lipschitz: float = 1.0, gap_slope: float = 2.0):
    """``B(η, ε) = g·ε + L·η²/(4ε) + J·η²/ε²`` (module docstring); ``inf`` at ε = 0 unless η = 0."""
    eta, eps = np.asarray(eta, dtype=float), np.asarray(as_epsilon(epsilon), dtype=float)
    if np.any(~np.isfinite(eta)) or np.any(eta < 0):
        raise ValueError(f"eta must be finite and >= 0, got {eta}")
    jump, lipschitz = _constant("jump", jump, allow_zero=True), _constant("lipschitz", lipschitz, allow_zero=True)
    gap_slope = _constant("gap_slope", gap_slope)
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
    jump, lipschitz = _constant("jump", jump, allow_zero=True), _constant("lipschitz", lipschitz, allow_zero=True)
    gap_slope = _constant("gap_slope", gap_slope)
    # depressed cubic t³ + P t + Q = 0
    P = -lipschitz * eta**2 / (4 * gap_slope)
    Q = -2 * jump * eta**2 / gap_slope
    disc = (Q / 2) ** 2 + (P / 3) ** 3
    with np.errstate(invalid="ignore", divide="ignore"):
        one = np.cbrt(-Q / 2 + np.sqrt(np.maximum(disc, 0))) + np.cbrt(-Q / 2 - np.sqrt(np.maximum(disc, 0)))
        m = 2 * np.sqrt(np.maximum(-P / 3, 0))
        arg = np.clip(3 * Q / (P * m + (m == 0)), -1, 1)
        three = m * np.cos(np.arccos(arg) / 3)
    eps = np.where(disc >= 0, one, three)
    eps = np.where(eta == 0, 0.0, eps)
    return float(eps) if eps.ndim == 0 else eps


def conformal_epsilon(residuals, *, jump: float, lipschitz: float = 1.0, gap_slope: float = 2.0,
                      log: bool = False):
    """ε minimising the per-decision bound with the error's law estimated from held-out residuals:

        ε̂ = argmin_ε  g·ε + L·mean((|r| - ε)_+) + J·(#{i: |r_i| > ε} + 1)/(n + 1).

    ``(#{|r_i| > ε} + 1)/(n + 1)`` is the split-conformal upper estimate of ``P(|e_new| > ε)`` for
    an exchangeable new error, so ε̂ is a conformal quantile of ``|r|`` at the level ``α̂`` the bound
    trades against the gap. ``α̂`` is selected on the same residuals, so the ball's coverage of a new
    error is close to, not guaranteed at, ``1 - α̂``; as ``n`` grows ε̂ tends to the minimiser of the
    population objective ``g·ε + L·E(|e| - ε)_+ + J·P(|e| > ε)``. The objective is piecewise linear, increasing between order statistics
    (slope ``g - L·P̂ >= g - L``) when ``g >= L``; the minimum over ``{0} ∪ {|r|_(k)}`` is exact for
    any ``g, L`` (the breakpoints). ``log=True`` also returns ``{"alpha": α̂, "objective": ...}``.
    """
    a = np.sort(np.abs(as_predictions(residuals, "residuals")))
    if a.size < 2:
        raise ValueError(f"residuals must hold at least 2 values, got {a.size}")
    jump, lipschitz = _constant("jump", jump, allow_zero=True), _constant("lipschitz", lipschitz, allow_zero=True)
    gap_slope = _constant("gap_slope", gap_slope)
    n = a.size
    cand = np.concatenate([[0.0], a])
    above = n - np.searchsorted(a, cand, side="right")            # #{|r| > ε}
    tail = np.concatenate([np.cumsum(a[::-1])[::-1], [0.0]])      # tail[k] = Σ_{j >= k} a_j
    over = (tail[n - above] - above * cand) / n                   # mean((|r| - ε)_+)
    alpha = (above + 1) / (n + 1)
    obj = gap_slope * cand + lipschitz * over + jump * alpha
    k = int(np.argmin(obj))
    eps = float(cand[k])
    return (eps, {"alpha": float(alpha[k]), "objective": float(obj[k])}) if log else eps


def robust_gap(problem: DecisionProblem, epsilon, y_hat, n_states: int = 257) -> float:
    """Robust optimization gap ``G(ε) = sup_ŷ max_{y ∈ B_ε(ŷ)} [L(a_ε(ŷ), y) - L*(y)]``,
    the sup taken over the given predictions ``y_hat`` (numerically, on a state grid)."""
    _check_problem(problem)
    return float(np.max(problem.robust_value(y_hat, epsilon, n_states=n_states)))


def shade_grid(y) -> np.ndarray:
    """The tuning grid shared by ``epsilon="cv"`` and :class:`FixedShading`: 0 and 40 log-spaced
    values from 1e-4 to 1 times the held-out states' standard deviation."""
    scale = float(np.std(as_predictions(y, "y"))) or 1.0
    return np.concatenate([[0.0], scale * np.geomspace(1e-4, 1.0, 40)])


# policies ---------------------------------------------------------------------------------------


class _Policy(BaseEstimator):
    """The scikit-learn plumbing shared by every policy (FTP, robust, the baselines)."""

    _fit_needs_y = True

    def __sklearn_clone__(self):
        # the predictor is a fitted black box: share it (as sklearn.frozen.FrozenEstimator does);
        # everything else is cloned as usual
        from sklearn.base import clone

        params = self.get_params(deep=False)
        return type(self)(**{k: v if k == "predictor" else clone(v, safe=False) for k, v in params.items()})

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = self._fit_needs_y
        tags.target_tags.required = self._fit_needs_y
        tags.target_tags.positive_only = bool(getattr(self.problem, "state_low", -np.inf) >= 0)
        tags.input_tags.allow_nan = False
        return tags

    def _validate_common(self) -> None:
        _check_problem(self.problem)
        _predictor_ok(self.predictor)

    def _X(self, X, *, reset: bool):
        return validate_data(self, X, reset=reset, dtype=[np.float64, np.float32],
                             ensure_min_samples=1)

    def _Xy(self, X, y):
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], y_numeric=True,
                             ensure_min_samples=2 if self._fit_needs_y else 1)
        return X, _states(y, X.shape[0], self.problem)

    def predict_state(self, X) -> np.ndarray:
        """The predictor's ŷ for contexts ``X`` of shape ``(n, d)``; returns shape ``(n,)``."""
        return predict(self.predictor, _as_given(X, self._X(X, reset=False)))

    def act_on(self, y_hat) -> np.ndarray:  # pragma: no cover - every policy overrides it
        raise NotImplementedError

    def predict(self, X) -> np.ndarray:
        """Actions for contexts ``X`` of shape ``(n, d)``; returns shape ``(n,)``."""
        return self.act_on(self.predict_state(X))

    act = predict

    def score(self, X, y) -> float:
        """Negative mean regret on ``(X, y)`` (higher is better, as scikit-learn's scorers expect)."""
        a = self.predict(X)
        return -float(np.mean(self.problem.regret(a, _states(y, a.size, self.problem))))


def _as_given(X, checked):
    """What the predictor sees: a data frame as it came (its model may know the column names),
    otherwise the checked array."""
    return X if hasattr(X, "columns") else checked


class FollowThePrediction(_Policy):
    """FTP: act optimally for the predicted state, ``a = argmin_a L(a, ŷ(x))``.

    Args:
        problem: a :class:`~robustpredict.problems.DecisionProblem`.
        predictor: a callable ``X -> ŷ`` or a fitted scikit-learn regressor.

    Nothing is learned: ``fit(X)`` only records the input width; ``predict`` works without it.
    """

    _fit_needs_y = False

    def __init__(self, problem: DecisionProblem, predictor):
        self.problem = problem
        self.predictor = predictor
        self._validate_common()

    def fit(self, X, y=None) -> FollowThePrediction:
        self._validate_common()
        if y is None:
            self._X(X, reset=True)
        else:
            self._Xy(X, y)
        return self

    def act_on(self, y_hat) -> np.ndarray:
        """Actions for given predictions."""
        return self.problem.ftp_action(y_hat)


class RobustPolicy(_Policy):
    """ε-robust policy: ``a = argmin_a max_{|y - ŷ(x)| <= ε} L(a, y)``.

    Args:
        problem: a :class:`~robustpredict.problems.DecisionProblem` (closed form for the paper's
            three problems, generic numerical min–max otherwise).
        predictor: a callable ``X -> ŷ`` or a fitted scikit-learn regressor.
        epsilon: a radius ``>= 0``, or a rule applied by :meth:`fit` on held-out data (module
            docstring): ``"auto"`` (minimiser of the bound at the held-out RMSE; with ``eta`` given,
            the *oracle* variant), ``"conformal"`` (the bound with a conformal tail estimate) or
            ``"cv"`` (``cv``-fold cross-validated regret over ``grid``).
        eta: a known RMSE (``"auto"`` only; supplying the true η is the *oracle* variant).
        eta_method: ``"rmse"`` or ``"conformal"`` (the η fed to ``"auto"``; see :func:`estimate_eta`).
        alpha: miscoverage of the conformal η estimator.
        grid: the radii ``"cv"`` searches (default :func:`shade_grid` of the held-out states).
        cv: number of folds for ``"cv"``.
        random_state: seed of the folds' shuffle.

    When the problem does not state its constants (``gap_slope``/``lipschitz`` ``None``, e.g. a
    :class:`~robustpredict.problems.CustomProblem` without them), ``"auto"`` and ``"conformal"``
    estimate ``g`` by :func:`robust_gap` on the held-out predictions and use ``L = 1``, with a warning.

    Fitted attributes: ``eta_``, ``jump_``, ``epsilon_``, ``gap_slope_``, ``lipschitz_``,
    ``n_features_in_`` (and ``cv_scores_`` for ``"cv"``: mean held-out regret per grid value).

    Example:
        >>> import numpy as np
        >>> from robustpredict import PostedPricing, RobustPolicy
        >>> pol = RobustPolicy(PostedPricing(), lambda X: X[:, 0], epsilon=0.5)
        >>> pol.predict(np.array([[3.0], [4.0]]))
        array([2.5, 3.5])
    """

    def __init__(self, problem: DecisionProblem, predictor, epsilon="auto", *, eta=None,
                 eta_method: str = "rmse", alpha: float = 0.1, grid=None, cv: int = 5, random_state=None):
        self.problem = problem
        self.predictor = predictor
        self.epsilon = epsilon
        self.eta = eta
        self.eta_method = eta_method
        self.alpha = alpha
        self.grid = grid
        self.cv = cv
        self.random_state = random_state
        self._validate_params()

    @property
    def _fit_needs_y(self) -> bool:
        return isinstance(self.epsilon, str) and not (self.epsilon == "auto" and self.eta is not None)

    def _validate_params(self) -> None:
        self._validate_common()
        e = self.epsilon
        if isinstance(e, str):
            if e not in EPSILON_RULES:
                raise ValueError(f"epsilon must be one of {EPSILON_RULES} or a number >= 0, got {e!r}")
        elif isinstance(e, bool) or not isinstance(e, numbers.Real):
            raise TypeError(f"epsilon must be a number or one of {EPSILON_RULES}, got {type(e).__name__}")
        else:
            as_epsilon(e)
        if self.eta is not None:
            _constant("eta", self.eta, allow_zero=True)
        if self.eta_method not in ("rmse", "conformal"):
            raise ValueError(f"eta_method must be 'rmse' or 'conformal', got {self.eta_method!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) or not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be a number in (0, 1), got {self.alpha!r}")
        if self.grid is not None:
            g = np.asarray(self.grid, dtype=float)
            if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)) or np.any(g < 0):
                raise ValueError("grid must be a non-empty 1-D array of finite values >= 0")
        if isinstance(self.cv, bool) or not isinstance(self.cv, numbers.Integral) or self.cv < 2:
            raise ValueError(f"cv must be an integer >= 2, got {self.cv!r}")

    # constants of the bound
    def _constants(self, y_hat) -> tuple[float, float]:
        p = self.problem
        g, L = p.gap_slope, p.lipschitz
        missing = []
        if g is None:
            sub = np.asarray(y_hat)[:64]
            ref = max(self.eta_ or 0.0, 1e-3 * (float(np.std(sub)) or 1.0))
            g = max(robust_gap(p, e, sub) / e for e in (ref, 3 * ref))
            missing.append(f"gap_slope (estimated by robust_gap on the held-out predictions: {g:.4g})")
        if L is None:
            L = 1.0
            missing.append("lipschitz (default L = 1)")
        if missing:
            warnings.warn(f"epsilon={self.epsilon!r} on {type(p).__name__} without stated constants: "
                          + "; ".join(missing) + ". Pass them to the problem (e.g. CustomProblem(..., "
                          "gap_slope=, lipschitz=)) for an ε from the right bound.", UserWarning, stacklevel=3)
        return float(g), float(L)

    def fit(self, X, y) -> RobustPolicy:
        """Learn ε from held-out ``(X, y)`` (never the data the predictor was trained on): η, the
        jump ``J`` where the problem needs data for it, and ``epsilon_`` by the chosen rule."""
        self._validate_params()
        Xc, y = self._Xy(X, y)
        y_hat = predict(self.predictor, _as_given(X, Xc))
        r = y - y_hat
        if self.eta is not None:
            self.eta_ = float(self.eta)
        elif self._fit_needs_y:
            self.eta_ = estimate_eta(r, self.eta_method, self.alpha)
        else:  # a given radius: η is only reported (one sample is enough for an RMSE)
            self.eta_ = float(np.sqrt(np.mean(r**2)))
        self.jump_ = float(self.problem.jump(y))
        rule = self.epsilon
        if rule in ("auto", "conformal"):
            if not np.isfinite(self.jump_):
                raise ValueError(f"epsilon={rule!r} needs a finite jump J: give the problem one or pass a number")
            self.gap_slope_, self.lipschitz_ = self._constants(y_hat)
            kw = dict(jump=self.jump_, lipschitz=self.lipschitz_, gap_slope=self.gap_slope_)
            self.epsilon_ = epsilon_for(self.eta_, **kw) if rule == "auto" else conformal_epsilon(r, **kw)
        elif rule == "cv":
            grid = shade_grid(y) if self.grid is None else np.asarray(self.grid, dtype=float)
            reg = np.stack([self.problem.regret(self.problem.robust_action(y_hat, e), y) for e in grid])
            folds = KFold(self.cv, shuffle=True, random_state=self.random_state).split(y_hat)
            self.cv_scores_ = np.mean([reg[:, te].mean(1) for _, te in folds], axis=0)
            self.epsilon_ = float(grid[int(np.argmin(self.cv_scores_))])
        else:
            self.epsilon_ = float(rule)
        return self

    def _epsilon(self) -> float:
        if hasattr(self, "epsilon_"):
            return self.epsilon_
        if not isinstance(self.epsilon, str):
            return float(self.epsilon)
        if self.epsilon == "auto" and self.eta is not None:
            jump = self.problem.jump(None)
            if not np.isfinite(jump):
                raise ValueError("epsilon='auto' needs a finite jump J: give the problem one or pass a number")
            if self.problem.gap_slope is None or self.problem.lipschitz is None:
                raise NotFittedError("epsilon='auto' on a problem without stated constants: call fit first")
            return epsilon_for(float(self.eta), jump=jump, lipschitz=self.problem.lipschitz,
                               gap_slope=self.problem.gap_slope)
        raise NotFittedError(f"epsilon={self.epsilon!r}: call fit(X_heldout, y_heldout) first")

    def act_on(self, y_hat) -> np.ndarray:
        """Actions for given predictions."""
        return self.problem.robust_action(y_hat, self._epsilon())


def excess_loss(policy, X, y, *, per_decision: bool = False):
    """Mean regret ``E[L(π(x), y) - min_a L(a, y)]`` of ``policy`` on ``(X, y)``
    (``per_decision=True``: the array of regrets)."""
    if not hasattr(policy, "predict") or not hasattr(policy, "problem"):
        raise TypeError(f"policy must have .predict and .problem, got {type(policy).__name__}")
    a = policy.predict(X)
    y = _states(y, a.size, policy.problem)
    r = policy.problem.regret(a, y)
    return r if per_decision else float(np.mean(r))
