import numpy as np
import pytest
from cmcboot import EpisodicBootstrap, ModelBootstrap, PluginCLT, delta_method, policy_evaluation, value_iteration
from cmcboot.baselines import bellman_gradient, episodic_bootstrap_counts, loop_bootstrap_counts
from cmcboot.bootstrap import simulate_counts


def _direction(rng, P):
    D = rng.normal(size=P.shape) * (P > 0)
    return D - (D.sum(-1, keepdims=True) / np.maximum((P > 0).sum(-1, keepdims=True), 1)) * (P > 0)


@pytest.mark.parametrize("target", ["V", "Q", "Qstar"])
def test_bellman_gradient_matches_finite_differences(small_mdp, rng, target):
    P, R = small_mdp
    pi = np.array([[0.3, 0.7], [0.5, 0.5], [0.9, 0.1]])
    g = bellman_gradient(P, R, 0.85, target, pi)
    D = _direction(rng, P)

    def f(PP):
        if target == "Qstar":
            return value_iteration(PP, R, 0.85)
        return policy_evaluation(PP, R, pi, 0.85)[0 if target == "V" else 1]

    eps = 1e-6
    fd = (f(P + eps * D) - f(P - eps * D)) / (2 * eps)
    analytic = np.tensordot(g, D, axes=3)
    np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target", ["V", "Q"])
def test_delta_se_equals_the_explicit_block_covariance_formula(small_mdp, target):
    P, R = small_mdp
    pi = np.array([[0.3, 0.7], [0.5, 0.5], [0.9, 0.1]])
    N = np.array([[40, 10], [25, 70], [5, 33]])
    _, se = delta_method(P, N, R, 0.85, target, pi)
    g = bellman_gradient(P, R, 0.85, target, pi).reshape(-1, 3, 2, 3)
    var = np.zeros(g.shape[0])
    for s in range(3):
        for a in range(2):
            cov = (np.diag(P[s, a]) - np.outer(P[s, a], P[s, a])) / N[s, a]
            var += np.einsum("oi,ij,oj->o", g[:, s, a], cov, g[:, s, a])
    np.testing.assert_allclose(se.ravel(), np.sqrt(var), rtol=1e-10)


def test_delta_se_matches_monte_carlo_spread_of_the_plug_in(small_mdp, rng):
    """With fixed N(s, a), P̂ rows are multinomial: the sd of V̂ is close to the delta-method se."""
    P, R = small_mdp
    pi = np.full((3, 2), 0.5)
    N = np.full((3, 2), 400)
    counts = np.stack([rng.multinomial(400, P[s, a], size=3000) for s in range(3) for a in range(2)], 1)
    P_hat = counts.reshape(3000, 3, 2, 3) / 400.0
    V_hat = policy_evaluation(P_hat, R, pi, 0.85)[0]
    _, se = delta_method(P, N, R, 0.85, "V", pi)
    np.testing.assert_allclose(V_hat.std(0), se, rtol=0.1)


def test_episodic_bootstrap_resamples_whole_episodes(rng):
    ep = rng.integers(0, 4, size=(1, 6, 2, 2, 2))
    c = episodic_bootstrap_counts(ep, 40, rng)[0]
    flat_ep, flat_c = ep[0].reshape(6, -1), c.reshape(40, -1)
    w, *_ = np.linalg.lstsq(flat_ep.T.astype(float), flat_c.T.astype(float), rcond=None)
    # each replicate is an integer combination of the episodes whose weights sum to K
    assert np.allclose(flat_ep.T @ np.rint(w), flat_c.T)
    assert np.allclose(np.rint(w).sum(0), 6)


def test_episodic_bootstrap_needs_two_episodes(river_chain):
    _, _, traj = river_chain
    with pytest.raises(ValueError, match="at least 2 episodes"):
        EpisodicBootstrap(n_boot=10).fit(traj)
    lo, hi = EpisodicBootstrap(n_boot=50, seed=0).fit(np.split(traj[:3000], 10)).interval(
        "V", policy=np.full((6, 2), 0.5), rewards=np.eye(6, 2))
    assert np.all(lo <= hi)


def test_plugin_clt_interval_and_errors(river_chain):
    _, R, traj = river_chain
    pi = np.full((6, 2), 0.5)
    clt = PluginCLT().fit(traj)
    lo, hi = clt.interval("Q", policy=pi, rewards=R, level=0.9)
    est = policy_evaluation(clt.P_hat_, R, pi, 0.9)[1]
    np.testing.assert_allclose((lo + hi) / 2, est, rtol=1e-10)
    lo95, hi95 = clt.interval("Q", policy=pi, rewards=R, level=0.95)
    assert np.all(hi95 - lo95 >= hi - lo)
    with pytest.raises(ValueError, match="gamma"):
        clt.interval("V", policy=pi, rewards=R, gamma=-0.5)
    with pytest.raises(ValueError, match="rewards is required"):
        clt.interval("V", policy=pi)


def test_clt_and_model_bootstrap_agree_for_large_n(river_chain):
    _, R, traj = river_chain
    pi = np.full((6, 2), 0.5)
    lo_b, hi_b = ModelBootstrap(n_boot=300, seed=0).fit(traj).interval("V", policy=pi, rewards=R, method="normal")
    lo_c, hi_c = PluginCLT().fit(traj).interval("V", policy=pi, rewards=R)
    np.testing.assert_allclose(hi_b - lo_b, hi_c - lo_c, rtol=0.3)


def test_loop_and_vectorised_simulators_have_the_same_law(rng):
    P = rng.dirichlet(np.ones(3), size=(3, 2))
    pi = rng.dirichlet(np.ones(2), size=3)
    ca = loop_bootstrap_counts(P, pi, [0], [300], 200, np.random.default_rng(1))
    cb = simulate_counts(P[None], pi[None], np.array([[0]]), np.array([300]), 200, np.random.default_rng(2))[0]
    assert np.all(ca.sum((1, 2, 3)) == 300) and np.all(cb.sum((1, 2, 3)) == 300)
    assert np.abs(ca.mean(0) - cb.mean(0)).max() < 0.1 * 300 / 6


def test_plugin_clt_validates_sizes_and_warns_when_inferred(river_chain):
    _, _, traj = river_chain
    with pytest.raises(TypeError, match="n_states"):
        PluginCLT(n_states="6")
    with pytest.raises(ValueError, match="unvisited"):
        PluginCLT(unvisited="zero")
    with pytest.warns(UserWarning, match="n_states inferred"):
        PluginCLT(n_actions=2).fit(traj)
    assert PluginCLT(n_states=8, n_actions=2).fit(traj).unreached_states_.tolist() == [6, 7]
