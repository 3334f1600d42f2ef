import itertools

import numpy as np
import pytest
from cmcboot import RiverSwimEnv, policy_evaluation, riverswim, value_iteration
from cmcboot.mdp import check_gamma, check_policy, greedy, tie_mask


def _mc_return(env, policy, state, first_action, n_rollouts, horizon, gamma, rng):
    """Discounted returns of rollouts of the gymnasium env started in ``state`` (truncated at ``horizon``)."""
    env.reset(seed=int(rng.integers(2**31)))
    disc = gamma ** np.arange(horizon)
    returns = np.empty(n_rollouts)
    for i in range(n_rollouts):
        env._state = s = state
        u = rng.random(horizon)
        r = np.empty(horizon)
        for t in range(horizon):
            a = first_action if (t == 0 and first_action is not None) else int(u[t] < policy[s, 1])
            s, r[t], *_ = env.step(a)
        returns[i] = disc @ r
    return returns


def test_exact_values_match_monte_carlo_rollouts(rng):
    gamma, horizon = 0.7, 45          # gamma**horizon < 1e-6: truncation is negligible
    env = RiverSwimEnv(n_states=4, variant="psrl")
    pi = np.full((4, 2), 0.5)
    V, Q = policy_evaluation(env.P, env.R, pi, gamma)
    for s in (0, 3):
        g = _mc_return(env, pi, s, None, 500, horizon, gamma, rng)
        assert abs(g.mean() - V[s]) < 4 * g.std() / np.sqrt(g.size) + 1e-5
    # Q*(3, right): first action right, then the optimal policy
    qstar = value_iteration(env.P, env.R, gamma)
    g = _mc_return(env, greedy(qstar), 3, 1, 500, horizon, gamma, rng)
    assert abs(g.mean() - qstar[3, 1]) < 4 * g.std() / np.sqrt(g.size) + 1e-5


def test_qstar_matches_brute_force_over_deterministic_policies(small_mdp):
    P, R = small_mdp
    best = np.full(3, -np.inf)
    for acts in itertools.product(range(2), repeat=3):
        best = np.maximum(best, policy_evaluation(P, R, np.eye(2)[list(acts)], 0.8)[0])
    q = value_iteration(P, R, 0.8)
    np.testing.assert_allclose(q.max(-1), best, rtol=1e-9)
    np.testing.assert_allclose(q, R + 0.8 * P @ best, rtol=1e-9)


def test_policy_evaluation_solves_bellman_equation(small_mdp):
    P, R = small_mdp
    pi = np.array([[0.3, 0.7], [1.0, 0.0], [0.5, 0.5]])
    V, Q = policy_evaluation(P, R, pi, 0.95)
    np.testing.assert_allclose(V, (pi * (R + 0.95 * P @ V)).sum(-1), rtol=1e-10)
    np.testing.assert_allclose(V, (pi * Q).sum(-1), rtol=1e-10)


def test_batched_operators_equal_one_at_a_time(rng):
    P = rng.dirichlet(np.ones(4), size=(5, 4, 3))
    R = rng.normal(size=(4, 3))
    pi = rng.dirichlet(np.ones(3), size=4)
    Vb, _ = policy_evaluation(P, R, pi, 0.9)
    qb = value_iteration(P, R, 0.9)
    for i in range(5):
        np.testing.assert_allclose(Vb[i], policy_evaluation(P[i], R, pi, 0.9)[0], rtol=1e-10)
        np.testing.assert_allclose(qb[i], value_iteration(P[i], R, 0.9), rtol=1e-9)


def test_riverswim_optimal_policy_swims_right():
    P, R = riverswim(6)
    q = value_iteration(P, R, 0.9)
    assert np.all(q.argmax(-1) == 1)
    assert not tie_mask(q).any()


def test_tie_mask_flags_identical_actions(small_mdp):
    P, R = small_mdp
    P2 = np.stack([P[:, 0], P[:, 0]], axis=1)
    R2 = np.stack([R[:, 0], R[:, 0]], axis=1)
    assert tie_mask(value_iteration(P2, R2, 0.9)).all()


@pytest.mark.parametrize("gamma", [1.0, -0.1, 1.5])
def test_gamma_out_of_range(gamma):
    with pytest.raises(ValueError, match="gamma"):
        check_gamma(gamma)


def test_gamma_wrong_type():
    with pytest.raises(TypeError, match="gamma"):
        check_gamma("0.9")


@pytest.mark.parametrize("bad", [np.array([[0.5, 0.6], [0.5, 0.5]]), np.array([[1.2, -0.2], [0.5, 0.5]]),
                                 np.ones((3, 2)) / 2])
def test_policy_rows_must_be_distributions(bad):
    with pytest.raises(ValueError, match="policy"):
        check_policy(bad, 2, 2)
