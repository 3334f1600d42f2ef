import warnings

import numpy as np
import pytest
from occirl import empirical_occupancy, mce_dual, occupancy, occupancy_jacobian, quadrature_step, soft_value_iteration
from occirl.envs import TabularMDPEnv, garnet_mdp
from occirl.mdp import sample_trajectories


def test_soft_vi_bellman_and_monte_carlo(small, rng):
    P, p0, g, R = small["P"], small["p0"], small["gamma"], small["R"]
    V, Q, pi = soft_value_iteration(P, R, gamma=g)
    np.testing.assert_allclose(Q, R + g * P @ V, atol=1e-10)
    np.testing.assert_allclose(pi.sum(1), 1.0)
    # Monte-Carlo: p0·V = E Σ_t γ^t (r - log π), and d_π from rollouts
    T, n = 120, 20000
    trajs = np.stack(sample_trajectories(P, pi, p0, n, T, rng))
    s, a = trajs[..., 0], trajs[..., 1]
    disc = g ** np.arange(T)
    ret = ((R[s, a] - np.log(pi[s, a])) * disc).sum(1)
    assert abs(ret.mean() - p0 @ V) < 4 * ret.std() / np.sqrt(n) + g ** T * 10
    d_mc = empirical_occupancy(list(trajs), *R.shape, gamma=g)
    d = occupancy(P, pi, p0, gamma=g)
    assert np.abs(d_mc - d).max() < 0.05 * d.max()
    assert abs(d.sum() - 1 / (1 - g)) < 1e-9


def test_finite_horizon_against_monte_carlo(small, rng):
    P, p0, R = small["P"], small["p0"], small["R"]
    H = 7
    V, Q, pi = soft_value_iteration(P, R, horizon=H)
    assert V.shape == (H, 6) and pi.shape == (H, 6, 3)
    d = occupancy(P, pi, p0, horizon=H)
    assert abs(d.sum() - H) < 1e-9
    trajs = sample_trajectories(P, pi, p0, 20000, H, rng)
    d_mc = empirical_occupancy(trajs, 6, 3, horizon=H)
    assert np.abs(d_mc - d).max() < 0.05 * d.max()


def test_against_imitation(small):
    pytest.importorskip("imitation.algorithms.mce_irl",
                        reason="imitation (installed with --no-deps beside seals and stable-baselines3) is absent")
    from occirl.baselines import imitation_occupancy, imitation_partition_fh

    P, p0 = small["P"], small["p0"]
    H = 9
    Rs = np.random.default_rng(3).normal(size=6)
    env = TabularMDPEnv(P, Rs, gamma=1.0, p0=p0, horizon=H)
    V_i, Q_i, pi_i = imitation_partition_fh(env, Rs)
    V, Q, pi = soft_value_iteration(P, env.reward_sa, horizon=H)
    np.testing.assert_allclose(V, V_i, atol=1e-10)
    np.testing.assert_allclose(pi, pi_i, atol=1e-10)
    D, Dcum = imitation_occupancy(env, Rs)
    # imitation's Dcum also sums the state after the last step (H + 1 rows)
    np.testing.assert_allclose(occupancy(P, pi, p0, horizon=H).sum(1), Dcum - D[H], atol=1e-10)


@pytest.mark.parametrize("horizon", [None, 5])
def test_dual_gradient_and_fisher_by_finite_differences(small, horizon):
    P, p0, g, d_E = small["P"], small["p0"], small["gamma"], small["d_E"]
    kw = {"gamma": g} if horizon is None else {"horizon": horizon}
    r = np.random.default_rng(1).normal(size=(6, 3))
    pi = soft_value_iteration(P, r, **kw)[2]
    grad = occupancy(P, pi, p0, **kw) - d_E
    F = occupancy_jacobian(P, r, p0, **kw)
    h = 1e-5
    for idx in [(0, 0), (2, 1), (5, 2)]:
        e = np.zeros((6, 3))
        e[idx] = h
        fd = (mce_dual(P, r + e, p0, d_E, **kw) - mce_dual(P, r - e, p0, d_E, **kw)) / (2 * h)
        assert abs(fd - grad[idx]) < 1e-6
        dp = occupancy(P, soft_value_iteration(P, r + e, **kw)[2], p0, **kw)
        dm = occupancy(P, soft_value_iteration(P, r - e, **kw)[2], p0, **kw)
        np.testing.assert_allclose(F[:, idx[0] * 3 + idx[1]], ((dp - dm) / (2 * h)).ravel(), atol=1e-6)
    np.testing.assert_allclose(F, F.T, atol=1e-10)
    assert np.linalg.eigvalsh((F + F.T) / 2).min() > -1e-10  # PSD: the Hessian of the convex log-partition


def test_log_pi_E_is_soft_optimal(small):
    P, p0, g, pi_E, d_E = small["P"], small["p0"], small["gamma"], small["pi_E"], small["d_E"]
    V, _, pi = soft_value_iteration(P, np.log(pi_E), gamma=g)
    np.testing.assert_allclose(V, 0.0, atol=1e-10)
    np.testing.assert_allclose(occupancy(P, pi, p0, gamma=g), d_E, atol=1e-10)
    # and the wrong target (the hidden reward's softmax without dynamics) is not
    wrong = np.log(np.exp(small["R"]) / np.exp(small["R"]).sum(1, keepdims=True))
    pi_w = soft_value_iteration(P, wrong, gamma=g)[2]
    assert np.abs(occupancy(P, pi_w, p0, gamma=g) - d_E).max() > 1e-3


def test_quadrature_step_equals_interpolation(small):
    P, p0, g, pi_E, d_E = small["P"], small["p0"], small["gamma"], small["pi_E"], small["d_E"]
    r = np.random.default_rng(2).normal(size=(6, 3)) * 2
    eta = 0.3
    rq = quadrature_step(P, p0, r, np.log(pi_E), d_E, eta, gamma=g)
    ri = (1 - eta) * r + eta * np.log(pi_E)
    np.testing.assert_allclose(soft_value_iteration(P, rq, gamma=g)[2], soft_value_iteration(P, ri, gamma=g)[2],
                               atol=1e-8)
    # the rewards differ only along the Fisher's null space (potential shaping)
    F = occupancy_jacobian(P, ri, p0, gamma=g)
    assert np.abs(F @ (rq - ri).ravel()).max() < 1e-8
    # a quadrature towards a target that is not soft-optimal for d_E is not the interpolation
    rq_bad = quadrature_step(P, p0, r, np.zeros((6, 3)), d_E, eta, gamma=g)
    ri_bad = (1 - eta) * r
    assert np.abs(soft_value_iteration(P, rq_bad, gamma=g)[2] - soft_value_iteration(P, ri_bad, gamma=g)[2]).max() > 1e-4


def test_empirical_occupancy_normalisation_and_bad_rows():
    g = 0.9
    trajs = [np.array([[0, 1], [1, 0], [2, 1]]), np.array([[1, 1], [0, 0], [1, 0]])]
    d = empirical_occupancy(trajs, 3, 2, gamma=g)
    assert abs(d.sum() - (1 + g + g * g)) < 1e-12
    assert d[0, 1] == pytest.approx(0.5)
    bad = [np.array([[0, 1], [7, 0], [2, 5], [1, 1]])]
    with pytest.warns(UserWarning, match="skipped 2 rows"):
        d2 = empirical_occupancy(bad, 3, 2, gamma=g)
    assert d2[1, 1] == pytest.approx(g ** 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empirical_occupancy(trajs, 3, 2, horizon=2)
    with pytest.raises(ValueError, match=r"trajectories\[0\]"):
        empirical_occupancy([np.zeros((3, 3), dtype=int)], 3, 2, gamma=g)


def test_bad_mdp_input(small):
    P = small["P"].copy()
    with pytest.raises(ValueError, match="P rows must sum to 1"):
        soft_value_iteration(P * 1.1, np.zeros((6, 3)), gamma=0.9)
    Pn = P.copy()
    Pn[0, 0, 0] -= 0.5
    Pn[0, 0, 1] += 0.5
    if Pn[0, 0, 0] >= 0:
        Pn[0, 0, 0], Pn[0, 0, 1] = -0.2, Pn[0, 0, 1] + Pn[0, 0, 0] + 0.2
    with pytest.raises(ValueError, match="non-negative"):
        soft_value_iteration(Pn, np.zeros((6, 3)), gamma=0.9)
    with pytest.raises(ValueError, match="reward must have shape"):
        soft_value_iteration(P, np.zeros((6, 2)), gamma=0.9)
    for gbad in (1.0, -0.1):
        with pytest.raises(ValueError, match="gamma"):
            soft_value_iteration(P, np.zeros((6, 3)), gamma=gbad)
    with pytest.raises(TypeError, match="gamma"):
        soft_value_iteration(P, np.zeros((6, 3)), gamma="0.9")
    with pytest.raises(ValueError, match="p0"):
        occupancy(P, np.full((6, 3), 1 / 3), np.ones(6), gamma=0.9)
    with pytest.raises(ValueError, match="give gamma"):
        soft_value_iteration(P, np.zeros((6, 3)))
    with pytest.raises(ValueError, match="finite"):
        soft_value_iteration(P, np.full((6, 3), np.nan), gamma=0.9)


def test_three_state_smoke():
    """A 3×3 MDP (3 states, 3 actions) with the theorem's checks."""
    rng = np.random.default_rng(5)
    P = garnet_mdp(3, 3, 2, rng)
    p0 = np.full(3, 1 / 3)
    pi_E = soft_value_iteration(P, rng.normal(size=(3, 3)), gamma=0.8)[2]
    d_E = occupancy(P, pi_E, p0, gamma=0.8)
    pi = soft_value_iteration(P, np.log(pi_E), gamma=0.8)[2]
    np.testing.assert_allclose(occupancy(P, pi, p0, gamma=0.8), d_E, atol=1e-10)
    r = rng.normal(size=(3, 3))
    rq = quadrature_step(P, p0, r, np.log(pi_E), d_E, 0.5, gamma=0.8)
    np.testing.assert_allclose(soft_value_iteration(P, rq, gamma=0.8)[2],
                               soft_value_iteration(P, 0.5 * r + 0.5 * np.log(pi_E), gamma=0.8)[2], atol=1e-8)
