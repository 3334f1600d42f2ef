import numpy as np
import pytest
from robustpredict import CustomProblem, DecisionProblem, HouseFlipping, PostedPricing, SkiRental


def _actions(problem, grid):
    return np.concatenate([grid, [HouseFlipping.PASS]]) if isinstance(problem, HouseFlipping) else grid


def _worst_loss(problem, actions, y_hat, eps, n=2001):
    states = problem.ball(y_hat, np.broadcast_to(eps, y_hat.shape), n)
    return problem.loss(np.asarray(actions)[:, None], states).max(-1)


def test_closed_form_matches_brute_force_minmax(problem, rng, brute_force_robust):
    y_hat = rng.uniform(0.0, 10.0, 30)
    eps = rng.uniform(0.0, 1.5, 30)
    a_bf, v_bf = brute_force_robust(problem, y_hat, eps)
    a_cf = problem.robust_action(y_hat, eps)
    v_cf = _worst_loss(problem, a_cf, y_hat, eps, n=301)
    # the closed form is at least as good as the best grid action, and the grid gets within its step
    step = (y_hat + 2 * eps + 1.0) / 2000
    assert np.all(v_cf <= v_bf + 1e-9)
    assert np.all(v_bf - v_cf <= step + 1e-9)


def test_generic_numerical_matches_closed_form(problem, rng):
    y_hat = rng.uniform(0.0, 10.0, 300)
    eps = rng.uniform(0.0, 1.5, 300)
    a_num = DecisionProblem.robust_action(problem, y_hat, eps)
    a_cf = problem.robust_action(y_hat, eps)
    np.testing.assert_allclose(_worst_loss(problem, a_num, y_hat, eps), _worst_loss(problem, a_cf, y_hat, eps),
                               atol=1e-4)


def test_generic_ftp_matches_closed_form(problem, rng):
    y_hat = rng.uniform(0.0, 10.0, 300)
    a_num = DecisionProblem.ftp_action(problem, y_hat)
    a_cf = problem.ftp_action(y_hat)
    np.testing.assert_allclose(problem.loss(a_num, y_hat), problem.loss(a_cf, y_hat), atol=1e-4)
    # FTP is optimal for the predicted state: no better action on a dense grid
    grid = _actions(problem, np.linspace(0, 12, 2401))
    best = problem.loss(grid[:, None], y_hat[None, :]).min(0)
    assert np.all(problem.loss(a_cf, y_hat) <= best + 1e-9)


def test_optimal_loss_is_the_minimum(problem, rng):
    y = rng.uniform(0.0, 10.0, 200)
    grid = _actions(problem, np.linspace(0, 12, 4801))
    best = problem.loss(grid[:, None], y[None, :]).min(0)
    np.testing.assert_allclose(problem.optimal_loss(y), best, atol=3e-3)
    assert np.all(problem.optimal_loss(y) <= best + 1e-12)


def test_robust_gap_is_two_epsilon(problem, rng):
    y_hat = rng.uniform(0.0, 10.0, 400)
    for eps in (0.01, 0.3, 1.0):
        v = problem.robust_value(y_hat, eps)
        assert np.all(v <= 2 * eps + 1e-9)
        assert v.max() >= 2 * eps * 0.99  # attained for some prediction


def test_regret_decomposition_holds_per_decision(problem, rng):
    """regret <= 2ε + L·(|e| - ε)_+ + J·1[|e| > ε] for every (ŷ, y): the step the bound rests on."""
    y_hat = rng.uniform(0.0, 10.0, 5000)
    y = np.maximum(y_hat + rng.normal(0, 1.0, y_hat.size), 0.0)
    for eps in (0.05, 0.5):
        a = problem.robust_action(y_hat, eps)
        e = np.abs(y - y_hat)
        jump = a.max() if isinstance(problem, PostedPricing) else problem.jump()
        rhs = 2 * eps + np.maximum(e - eps, 0) + jump * (e > eps)
        assert np.all(problem.regret(a, y) <= rhs + 1e-9)


def test_ftp_counterexample_is_a_constant_loss():
    """E[y|x] exactly, errors ±η: FTP's excess loss stays at a constant as η -> 0."""
    rng = np.random.default_rng(1)
    f = rng.uniform(2.0, 8.0, 20000)
    for problem, lower in ((PostedPricing(), 0.4 * np.mean(f)), (SkiRental(5.0), 0.2 * 5.0 * np.mean(f < 5)),
                           (HouseFlipping(5.0, 0.5), 0.2 * 0.5 * np.mean(f > 5))):
        losses = []
        for eta in (1e-1, 1e-3, 1e-5):
            y = f + eta * rng.choice([-1.0, 1.0], f.size)
            losses.append(np.mean(problem.regret(problem.ftp_action(f), y)))
            assert np.mean(problem.regret(problem.robust_action(f, 2 * eta), y)) <= 3 * eta + 1e-12
        assert min(losses) > lower
        assert max(losses) / min(losses) < 1.5


def test_custom_problem_numerical_path():
    # squared loss: FTP is the prediction and the ball's worst case is symmetric, so a = ŷ
    p = CustomProblem(lambda a, y: (a - y) ** 2, action_bounds=(-10, 10))
    y_hat = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_allclose(p.ftp_action(y_hat), y_hat, atol=1e-5)
    np.testing.assert_allclose(p.robust_action(y_hat, 0.7), y_hat, atol=1e-5)
    # the numerical min-max agrees with scipy's polish
    a = p.robust_action_numeric(y_hat, 0.7, polish=True)
    np.testing.assert_allclose(a, y_hat, atol=1e-5)


def test_custom_problem_asymmetric_loss_matches_brute_force():
    # newsvendor-like pinball loss; the minimax action over [ŷ-ε, ŷ+ε] equalises the two ends
    def loss(a, y):
        return np.maximum(3 * (y - a), 1 * (a - y))

    p = CustomProblem(loss, action_bounds=(0, 20))
    y_hat, eps = np.array([5.0, 8.0]), 1.0
    # max(3(ŷ+ε-a), a-ŷ+ε) is minimised where 3(ŷ+ε-a) = a-ŷ+ε  ->  a = ŷ + ε/2
    np.testing.assert_allclose(p.robust_action(y_hat, eps), y_hat + eps / 2, atol=1e-4)


@pytest.mark.parametrize("make, match", [
    (lambda: SkiRental(buy_cost=-1.0), "buy_cost"),
    (lambda: SkiRental(buy_cost=float("nan")), "buy_cost"),
    (lambda: HouseFlipping(purchase_cost=0.0), "purchase_cost"),
    (lambda: HouseFlipping(holding_cost=-0.5), "holding_cost"),
    (lambda: PostedPricing(value_bound=-3.0), "value_bound"),
    (lambda: PostedPricing().robust_action([1.0, np.nan], 0.1), "y_hat"),
    (lambda: PostedPricing().robust_action([1.0], -0.1), "epsilon"),
    (lambda: SkiRental().robust_action(np.ones((2, 2)), 0.1), "y_hat"),
    (lambda: CustomProblem(lambda a, y: a, action_bounds=(1, 0)), "action_bounds"),
])
def test_bad_input_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_types():
    with pytest.raises(TypeError, match="buy_cost"):
        SkiRental(buy_cost="5")
    with pytest.raises(TypeError, match="loss"):
        CustomProblem(3.0, action_bounds=(0, 1))


def test_custom_problem_loss_contract():
    """A loss that returns NaN, does not broadcast or fails inside is refused with the loss named."""
    with pytest.raises(ValueError, match="not finite"):
        CustomProblem(lambda a, y: np.where(a > 5, np.nan, (a - y) ** 2), action_bounds=(0, 10))
    with pytest.raises(ValueError, match="broadcast"):
        CustomProblem(lambda a, y: a[:, 0] - y, action_bounds=(0, 10))
    with pytest.raises(ValueError, match="broadcast"):
        CustomProblem(lambda a, y: np.sum((a - y) ** 2), action_bounds=(0, 10))
    with pytest.raises(ValueError, match="broadcast"):
        CustomProblem(lambda a, y: (a - y)[0], action_bounds=(0, 10))  # a raw IndexError inside
    # a loss that goes bad only away from the probe is caught on the call that reaches it
    p = CustomProblem(lambda a, y: np.where(y > 50, np.inf, (a - y) ** 2), action_bounds=(0, 10))
    with pytest.raises(ValueError, match="not finite"):
        p.robust_action([49.9], 0.5)
    with pytest.raises(ValueError, match="not finite"):
        p.regret([1.0], [60.0])


def test_generic_solver_refuses_nan_from_a_subclass():
    class Bad(DecisionProblem):
        def loss(self, action, state):
            return np.where(np.asarray(action) > 1, np.nan, np.abs(np.asarray(action) - np.asarray(state)))

    with pytest.raises(ValueError, match="Bad.loss.*not finite"):
        Bad().robust_action([0.5], 0.1)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(lipschitz=-1.0), ValueError, "lipschitz"), (dict(gap_slope=0.0), ValueError, "gap_slope"),
    (dict(gap_slope="2"), TypeError, "gap_slope"), (dict(jump=-1.0), ValueError, "jump"),
    (dict(state_low=float("nan")), ValueError, "state_low"), (dict(action_bounds=(0, np.inf)), ValueError, "action_bounds"),
])
def test_custom_problem_bad_constants(kw, exc, match):
    args = dict(action_bounds=(0, 10), **kw) if "action_bounds" not in kw else kw
    with pytest.raises(exc, match=match):
        CustomProblem(lambda a, y: (a - y) ** 2, **args)
