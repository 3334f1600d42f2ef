"""Decision problems ``loss(action, state)`` with closed-form FTP and ε-robust actions.

A problem is a loss ``L(a, y)`` of an action ``a`` taken before the state ``y`` is revealed.
For a prediction ``ŷ`` of the state,

* follow-the-prediction (FTP) takes ``a*(ŷ) = argmin_a L(a, ŷ)``;
* the ε-robust policy takes ``a_ε(ŷ) = argmin_a max_{y ∈ B_ε(ŷ)} L(a, y)``, with
  ``B_ε(ŷ) = [ŷ - ε, ŷ + ε]`` intersected with the state domain.

The paper (abstract only is public) states closed forms for posted pricing, ski rental and house
flipping. The exact formulations below and their closed forms are **derived in this package**, not
copied from the paper: the tests check each against a brute-force grid min–max.

Every problem also carries the two constants of the excess-loss bound (see
:func:`robustpredict.robust.theoretical_bound`): the Lipschitz constant ``L`` of the regret beyond
the ball and the jump ``J`` (the largest regret a state outside the ball can cause on top of that).
For all three problems the robust optimization gap is ``G(ε) = 2ε``, ``L = 1``.

A user problem subclasses :class:`DecisionProblem` and implements ``loss`` (and, ideally,
``action_bounds``, ``gap_slope``, ``lipschitz`` and ``jump``), or wraps a loss function in
:class:`CustomProblem`; FTP and the robust action then come from the generic numerical min–max,
which refuses a loss that returns NaN/inf or does not broadcast.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

# validation ---------------------------------------------------------------------------------


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def _nonneg(name: str, value) -> float:
    value = _number(name, value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


def as_predictions(y_hat, name: str = "y_hat") -> np.ndarray:
    """``y_hat`` as a finite 1-D float array (a ``(n, 1)`` column is accepted)."""
    y = np.asarray(y_hat, dtype=float)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim == 0:
        y = y[None]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one prediction per context), got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return y


def as_epsilon(epsilon) -> float | np.ndarray:
    e = np.asarray(epsilon, dtype=float)
    if not np.all(np.isfinite(e)) or np.any(e < 0):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    return e if e.ndim else float(e)


# the interface --------------------------------------------------------------------------------


class DecisionProblem:
    """A contextual decision problem: subclass and implement :meth:`loss`.

    Attributes:
        state_low: lower end of the state domain (balls are clipped to it); default ``-inf``.
        lipschitz: ``L`` in the bound (growth of the regret beyond the ball); ``None``: unknown
            (a policy that needs it warns and uses 1).
        gap_slope: ``g`` with robust optimization gap ``G(ε) = g·ε``; ``None``: unknown (a policy
            that needs it warns and estimates it with :func:`robustpredict.robust.robust_gap`).
        extra_actions: discrete actions tried besides the continuous grid (e.g. "pass").

    The default :meth:`ftp_action` and :meth:`robust_action` solve the min–max numerically
    (:meth:`robust_action_numeric`); the problems of the paper override them with closed forms.
    """

    state_low: float = -np.inf
    lipschitz: float | None = None
    gap_slope: float | None = None
    extra_actions: tuple[float, ...] = ()

    # to implement
    def loss(self, action, state) -> np.ndarray:
        """``L(a, y)``, broadcasting over ``action`` and ``state``."""
        raise NotImplementedError

    def action_bounds(self, y_hat, epsilon):
        """Per-context search interval ``(low, high)`` for the generic solver."""
        w = np.abs(y_hat) + 4 * epsilon + 1.0
        return y_hat - w, y_hat + w

    def jump(self, states=None) -> float:
        """``J`` in the bound. Default: no jump is known, so ``inf`` (no finite bound)."""
        return np.inf

    # derived
    def _checked_loss(self, action, state) -> np.ndarray:
        """``loss`` with its contract checked: broadcast shape, finite values (the generic solver
        would otherwise rank NaN actions arbitrarily)."""
        action, state = np.asarray(action, dtype=float), np.asarray(state, dtype=float)
        want = np.broadcast_shapes(action.shape, state.shape)
        name = f"{type(self).__name__}.loss"
        try:
            out = np.asarray(self.loss(action, state), dtype=float)
        except (IndexError, ValueError, TypeError) as err:
            raise ValueError(f"{name}(action, state) failed on arrays of shapes {action.shape} and {state.shape}: "
                             f"{err} (the loss must broadcast like numpy arithmetic)") from err
        if out.shape != want:
            raise ValueError(f"{name}(action, state) must broadcast: on shapes {action.shape} and {state.shape} it "
                             f"returned shape {out.shape}, expected {want}")
        if not np.all(np.isfinite(out)):
            bad = np.argwhere(~np.isfinite(out))[0]
            a = np.broadcast_to(action, want)[tuple(bad)]
            y = np.broadcast_to(state, want)[tuple(bad)]
            raise ValueError(f"{name} returned {out[tuple(bad)]} (not finite) at action={a:g}, state={y:g}")
        return out

    def check_states(self, states, name: str = "y") -> np.ndarray:
        """``states`` as a finite 1-D array inside the state domain (``>= state_low``)."""
        y = as_predictions(states, name)
        if np.any(y < self.state_low):
            raise ValueError(f"{name} must be >= {self.state_low} for {type(self).__name__} "
                             f"(found {float(y.min()):g}): negative values, prices or lengths are not states")
        return y

    def optimal_loss(self, state) -> np.ndarray:
        """Full-information optimum ``min_a L(a, y)`` (default: numerically, via FTP on ``y``)."""
        y = as_predictions(state, "state")
        return self._checked_loss(self.ftp_action(y), y)

    def regret(self, action, state) -> np.ndarray:
        """``L(a, y) - min_a' L(a', y)``, the excess loss of one decision."""
        return self._checked_loss(action, state) - self.optimal_loss(state)

    def ball(self, y_hat, epsilon, n: int):
        """``n`` states spanning ``B_ε(ŷ)`` (both ends included), shape ``(len(y_hat), n)``."""
        lo = np.maximum(y_hat - epsilon, self.state_low)
        hi = np.maximum(y_hat + epsilon, lo)
        t = np.linspace(0.0, 1.0, n)
        return lo[:, None] + (hi - lo)[:, None] * t[None, :]

    def ftp_action(self, y_hat) -> np.ndarray:
        """``argmin_a L(a, ŷ)`` for each prediction."""
        return self.robust_action_numeric(y_hat, 0.0)

    def robust_action(self, y_hat, epsilon) -> np.ndarray:
        """``argmin_a max_{y ∈ B_ε(ŷ)} L(a, y)`` for each prediction."""
        return self.robust_action_numeric(y_hat, epsilon)

    def robust_action_numeric(self, y_hat, epsilon, *, n_actions: int = 129, n_states: int = 33,
                              n_refine: int = 4, n_keep: int = 3, n_zoom: int = 33, polish: bool = False,
                              chunk: int = 2048) -> np.ndarray:
        """Generic min–max: inner max over a state grid of the ball (ends included), outer min by a
        grid of ``n_actions`` points zoomed ``n_refine`` times around its ``n_keep`` best points
        (vectorised over contexts).

        With ``polish=True`` each context's outer minimum is polished by
        ``scipy.optimize.minimize_scalar(method="bounded")`` on the bracket left by the grid
        (slow: one scipy call per context).
        """
        y_hat = as_predictions(y_hat)
        eps = np.broadcast_to(as_epsilon(epsilon), y_hat.shape).astype(float)
        out = np.empty_like(y_hat)
        extra = np.asarray(self.extra_actions, dtype=float)
        for s in range(0, y_hat.size, chunk):
            yh, ep = y_hat[s:s + chunk], eps[s:s + chunk]
            states = self.ball(yh, ep, n_states if np.any(ep > 0) else 1)

            def worst(actions, states=states):  # (m, k) -> (m, k)
                return self._checked_loss(actions[:, :, None], states[:, None, :]).max(-1)

            lo0, hi0 = (np.broadcast_to(np.asarray(b, dtype=float), yh.shape).copy() for b in self.action_bounds(yh, ep))
            # coarse grid, then zoom around the ``n_keep`` best points (a narrow optimum next to a
            # discontinuity can lose to a wide plateau on the coarse grid)
            t = np.linspace(0.0, 1.0, n_actions)[None, :]
            grid = lo0[:, None] + (hi0 - lo0)[:, None] * t
            step = (hi0 - lo0) / (n_actions - 1)
            for level in range(n_refine + 1):
                w = worst(grid)
                order = np.argsort(w, axis=-1, kind="stable")[:, :n_keep]
                centres = np.take_along_axis(grid, order, -1)
                best = centres[:, 0]
                if level == n_refine:
                    break
                lo = np.maximum(centres - step[:, None], lo0[:, None])
                hi = np.minimum(centres + step[:, None], hi0[:, None])
                tt = np.linspace(0.0, 1.0, n_zoom)[None, None, :]
                grid = (lo[:, :, None] + (hi - lo)[:, :, None] * tt).reshape(yh.size, -1)
                step = 2 * step / (n_zoom - 1)
            lo, hi = np.maximum(best - step, lo0), np.minimum(best + step, hi0)
            if polish:
                for i in range(yh.size):
                    def f(a, s_i=states[i]):
                        return float(self.loss(a, s_i).max())
                    r = optimize.minimize_scalar(f, bounds=(lo[i], hi[i]), method="bounded",
                                                 options={"xatol": 1e-10})
                    if r.fun < f(best[i]):
                        best[i] = r.x
            if extra.size:
                w_best = worst(best[:, None])[:, 0]
                w_extra = worst(np.broadcast_to(extra, (yh.size, extra.size)).copy())
                j = w_extra.argmin(-1)
                use = w_extra[np.arange(yh.size), j] < w_best
                best = np.where(use, extra[j], best)
            out[s:s + chunk] = best
        return out

    def robust_value(self, y_hat, epsilon, action=None, n_states: int = 257) -> np.ndarray:
        """In-ball worst regret ``max_{y ∈ B_ε(ŷ)} [L(a, y) - L*(y)]`` of ``action``
        (default: the robust action), numerically over a state grid."""
        y_hat = as_predictions(y_hat)
        eps = np.broadcast_to(as_epsilon(epsilon), y_hat.shape).astype(float)
        a = self.robust_action(y_hat, eps) if action is None else np.broadcast_to(action, y_hat.shape)
        states = self.ball(y_hat, eps, n_states)
        reg = self._checked_loss(a[:, None], states) - self.optimal_loss(states.ravel()).reshape(states.shape)
        return reg.max(-1)


class CustomProblem(DecisionProblem):
    """A problem from a loss function, for quick use without subclassing.

    Args:
        loss: ``loss(action, state) -> array``, broadcasting like numpy arithmetic and finite.
            Probed at construction on a small grid of the action interval (states there too,
            clipped to ``state_low``) and checked on every call.
        action_bounds: global ``(low, high)`` search interval of the action.
        state_low: lower end of the state domain.
        jump: ``J`` of the bound, if known (``inf``: unknown, so no finite bound and no ``"auto"``).
        lipschitz: ``L`` of the bound (growth of the regret beyond the ball), if known.
        gap_slope: ``g`` of the robust optimization gap ``G(ε) = g·ε``, if known. Without it a
            policy with ``epsilon="auto"`` estimates it with :func:`~robustpredict.robust.robust_gap`
            and warns; without ``lipschitz`` it warns and uses 1.
        extra_actions: discrete actions tried besides the continuous grid.

    Example:
        >>> p = CustomProblem(lambda a, y: (a - y) ** 2, action_bounds=(-10, 10), jump=0.0,
        ...                   lipschitz=2.0, gap_slope=1.0)
        >>> float(p.ftp_action([1.5])[0])  # doctest: +ELLIPSIS
        1.5...
    """

    def __init__(self, loss, *, action_bounds, state_low: float = -np.inf, jump: float = np.inf,
                 lipschitz: float | None = None, gap_slope: float | None = None, extra_actions=()):
        if not callable(loss):
            raise TypeError(f"loss must be callable, got {type(loss).__name__}")
        try:
            lo, hi = (_number("action_bounds", b) for b in action_bounds)
        except (TypeError, ValueError) as err:
            raise type(err)(f"action_bounds must be (low, high) numbers: {err}") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"action_bounds must be finite (low, high) with low < high, got {action_bounds}")
        self.state_low = _number("state_low", state_low)
        if np.isnan(self.state_low) or self.state_low == np.inf:
            raise ValueError(f"state_low must be a number or -inf, got {state_low}")
        j = _number("jump", jump)
        if np.isnan(j) or j < 0:
            raise ValueError(f"jump must be >= 0 (inf if unknown), got {jump}")
        self.lipschitz = None if lipschitz is None else _nonneg("lipschitz", lipschitz)
        self.gap_slope = None if gap_slope is None else _positive("gap_slope", gap_slope)
        self._loss, self._bounds, self._jump = loss, (lo, hi), j
        self.extra_actions = tuple(_number("extra_actions", a) for a in extra_actions)
        # probe the contract once, where the problem is written
        a = np.linspace(lo, hi, 3)
        self._checked_loss(a[:, None], np.maximum(np.linspace(lo, hi, 4), self.state_low)[None, :])

    def loss(self, action, state):
        return np.asarray(self._loss(np.asarray(action, dtype=float), np.asarray(state, dtype=float)), dtype=float)

    def action_bounds(self, y_hat, epsilon):
        return np.full(np.shape(y_hat), self._bounds[0]), np.full(np.shape(y_hat), self._bounds[1])

    def jump(self, states=None) -> float:
        return self._jump


# the paper's three problems ---------------------------------------------------------------------


class PostedPricing(DecisionProblem):
    """Contextual posted pricing: post a price ``p >= 0`` to a buyer of value ``v >= 0``.

    ``L(p, v) = -p·1[v >= p]`` (negative revenue); ``L*(v) = -v``.

    * FTP posts ``p = ŷ`` (at the knife edge: any overestimate loses the sale).
    * ε-robust (derived): the worst state in the ball is ``v = ŷ - ε``, so ``p = max(ŷ - ε, 0)``
      (shade the prediction by ε). In-ball regret ``<= 2ε``.
    * Beyond the ball: ``v > ŷ + ε`` adds ``v - ŷ - ε`` (L = 1); ``v < p`` loses the sale, a regret
      ``v < p``, so ``J = `` the largest price posted (``value_bound`` if given).

    Args:
        value_bound: a known upper bound on values (``J``); ``None``: estimated from data.
    """

    state_low = 0.0
    lipschitz = 1.0
    gap_slope = 2.0

    def __init__(self, value_bound: float | None = None):
        self.value_bound = None if value_bound is None else _positive("value_bound", value_bound)

    def loss(self, action, state):
        p, v = np.asarray(action, dtype=float), np.asarray(state, dtype=float)
        return -p * (v >= p)

    def optimal_loss(self, state):
        return -np.maximum(np.asarray(state, dtype=float), 0.0)

    def action_bounds(self, y_hat, epsilon):
        return np.zeros_like(y_hat), np.maximum(y_hat, 0.0) + epsilon + 1e-9

    def ftp_action(self, y_hat):
        return np.maximum(as_predictions(y_hat), 0.0)

    def robust_action(self, y_hat, epsilon):
        return np.maximum(as_predictions(y_hat) - as_epsilon(epsilon), 0.0)

    def jump(self, states=None) -> float:
        if self.value_bound is not None:
            return self.value_bound
        if states is None:
            raise ValueError("PostedPricing(value_bound=None) needs states to estimate the jump J")
        return float(np.max(as_predictions(states, "states")))


class SkiRental(DecisionProblem):
    """Ski rental with an upfront booking: rent at 1 per day, or buy at ``buy_cost``.

    The action ``a >= 0`` is decided from the context before the season length ``y >= 0`` is known:
    book (and pay for) ``a`` rental days; if the season outlasts the booking, buy then.
    ``a = 0`` is "buy now". ``L(a, y) = a + b·1[y > a]``, ``L*(y) = min(y, b)``.

    This formulation is inferred (the abstract names the problem only): it is the one in which
    the textbook FTP, ``a = ŷ`` if ``ŷ < b`` else buy now, is brittle — any underestimate of the
    season costs the purchase.

    * ε-robust (derived): book ``a = ŷ + ε`` if ``ŷ + ε < b``, else buy now (worst-case cost
      ``min(ŷ + ε, b)``). In-ball regret ``<= 2ε``.
    * Beyond the ball: shorter seasons add ``ŷ - ε - y`` (L = 1); a longer season forces the
      purchase, a regret ``<= b`` (``J = b``).
    """

    state_low = 0.0
    lipschitz = 1.0
    gap_slope = 2.0

    def __init__(self, buy_cost: float = 5.0):
        self.buy_cost = _positive("buy_cost", buy_cost)

    def loss(self, action, state):
        a, y = np.asarray(action, dtype=float), np.asarray(state, dtype=float)
        return a + self.buy_cost * (y > a)

    def optimal_loss(self, state):
        return np.minimum(np.maximum(np.asarray(state, dtype=float), 0.0), self.buy_cost)

    def action_bounds(self, y_hat, epsilon):
        return np.zeros_like(y_hat), np.maximum(y_hat, 0.0) + 2 * epsilon + 1e-9

    def ftp_action(self, y_hat):
        y = np.maximum(as_predictions(y_hat), 0.0)
        return np.where(y < self.buy_cost, y, 0.0)

    def robust_action(self, y_hat, epsilon):
        a = np.maximum(as_predictions(y_hat), 0.0) + as_epsilon(epsilon)
        return np.where(a < self.buy_cost, a, 0.0)

    def jump(self, states=None) -> float:
        return self.buy_cost


class HouseFlipping(DecisionProblem):
    """House flipping: buy at ``purchase_cost``, list at a price, sell — or hold if it does not sell.

    Action ``a >= 0``: buy and list at ``a``; the house sells at ``a`` if its resale value ``y >= a``,
    otherwise it is held and sold later at ``y`` at a holding cost ``h``. Action ``PASS`` (-1): do
    not buy. Profit ``a - c`` (sold), ``y - h - c`` (held), 0 (pass); ``L = -profit``,
    ``L*(y) = -max(y - c, 0)``.

    The exact formulation is inferred from the abstract ("buy/hold/sell against a predicted resale
    price"). FTP lists at ``ŷ`` when ``ŷ > c``: every overestimate costs the holding cost.

    * ε-robust (derived): the worst state is ``y = ŷ - ε``: list at ``ŷ - ε`` if ``ŷ - ε > c``,
      else pass. In-ball regret ``<= 2ε``.
    * Beyond the ball: L = 1; an unsold house adds at most ``h`` (``J = h``).
    """

    PASS = -1.0
    state_low = 0.0
    lipschitz = 1.0
    gap_slope = 2.0
    extra_actions = (-1.0,)

    def __init__(self, purchase_cost: float = 5.0, holding_cost: float = 0.5):
        self.purchase_cost = _positive("purchase_cost", purchase_cost)
        self.holding_cost = _positive("holding_cost", holding_cost)

    def loss(self, action, state):
        a, y = np.asarray(action, dtype=float), np.asarray(state, dtype=float)
        c, h = self.purchase_cost, self.holding_cost
        profit = np.where(y >= a, a - c, y - h - c)
        return -np.where(a < 0, 0.0, profit)

    def optimal_loss(self, state):
        return -np.maximum(np.asarray(state, dtype=float) - self.purchase_cost, 0.0)

    def action_bounds(self, y_hat, epsilon):
        return np.zeros_like(y_hat), np.maximum(y_hat, 0.0) + epsilon + 1e-9

    def ftp_action(self, y_hat):
        y = as_predictions(y_hat)
        return np.where(y > self.purchase_cost, y, self.PASS)

    def robust_action(self, y_hat, epsilon):
        a = as_predictions(y_hat) - as_epsilon(epsilon)
        return np.where(a > self.purchase_cost, a, self.PASS)

    def jump(self, states=None) -> float:
        return self.holding_cost


PROBLEMS = {"pricing": PostedPricing, "ski": SkiRental, "house": HouseFlipping}
