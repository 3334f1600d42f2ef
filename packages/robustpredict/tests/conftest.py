import numpy as np
import pytest
from robustpredict import HouseFlipping, PostedPricing, SkiRental


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(params=["pricing", "ski", "house"])
def problem(request):
    return {"pricing": PostedPricing(), "ski": SkiRental(buy_cost=5.0),
            "house": HouseFlipping(purchase_cost=5.0, holding_cost=0.5)}[request.param]


def _brute_force_robust(problem, y_hat, eps, n_actions=2001, n_states=301):
    """Grid min over actions of the grid max over the ball, per prediction (independent of the package's solver)."""
    out_a, out_v = [], []
    for yh, e in zip(y_hat, eps):
        lo, hi = max(yh - e, 0.0), yh + e
        states = np.linspace(lo, hi, n_states)
        actions = np.concatenate([np.linspace(0.0, yh + 2 * e + 1.0, n_actions), [-1.0]])
        if not isinstance(problem, HouseFlipping):
            actions = actions[:-1]
        worst = problem.loss(actions[:, None], states[None, :]).max(1)
        k = int(np.argmin(worst))
        out_a.append(actions[k])
        out_v.append(worst[k])
    return np.array(out_a), np.array(out_v)


@pytest.fixture
def brute_force_robust():
    return _brute_force_robust
