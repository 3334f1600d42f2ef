import numpy as np
import pytest
from occirl import MCEIRL, OccupancyNaturalGradientIRL, TabularMDPEnv, mirror_descent_policy, occupancy
from occirl.mdp import sample_trajectories
from occirl.method import projection_target


@pytest.fixture(scope="module")
def env(small):
    return TabularMDPEnv(small["P"], small["R"], gamma=small["gamma"], p0=small["p0"])


def test_ng_exact_converges_to_expert(env, small):
    est = OccupancyNaturalGradientIRL(env, smoothing=0.0).fit(small["d_E"])
    assert est.converged_
    assert np.abs(est.policy_ - small["pi_E"]).max() < 1e-4
    h = est.history_
    assert set(h) >= {"dual", "nll", "l1", "solves"}
    assert np.all(np.diff(h["dual"]) <= 1e-10)  # the dual decreases along the interpolation
    # the dual's minimum over rewards equals the expert's NLL at the optimum (MCE duality)
    assert h["dual"][-1] == pytest.approx(h["nll"][-1] * small["d_E"].sum(), abs=1e-3)


def test_mce_irl_reaches_same_occupancy(env, small):
    est = MCEIRL(env, optimizer="adam", lr=0.3, max_iter=3000, tol=1e-7).fit(small["d_E"])
    d = occupancy(small["P"], est.policy_, small["p0"], gamma=small["gamma"])
    assert np.abs(d - small["d_E"]).max() < 1e-3
    sgd = MCEIRL(env, optimizer="sgd", lr=0.5, max_iter=3000, tol=1e-7).fit(small["d_E"])
    assert sgd.history_["l1"][-1] < sgd.history_["l1"][0] / 10


def test_features_converge_to_projection(env, small):
    feats = np.random.default_rng(0).normal(size=(6, 3, 4))
    est = OccupancyNaturalGradientIRL(env, features=feats, smoothing=0.0, tol=1e-12, max_iter=100).fit(small["d_E"])
    np.testing.assert_allclose(est.theta_, projection_target(feats, small["d_E"], np.log(small["pi_E"])), atol=1e-8)
    # the projection is d_E-weighted: residuals are orthogonal to the features under d_E
    res = (feats @ est.theta_ - np.log(small["pi_E"])) * small["d_E"]
    np.testing.assert_allclose(np.tensordot(feats, res, axes=([0, 1], [0, 1])), 0.0, atol=1e-8)


def test_quadrature_fisher_fit_matches_closed_form(env, small):
    a = OccupancyNaturalGradientIRL(env, smoothing=0.0, max_iter=6, tol=0.0).fit(small["d_E"])
    b = OccupancyNaturalGradientIRL(env, smoothing=0.0, fisher="quadrature", max_iter=6, tol=0.0).fit(small["d_E"])
    np.testing.assert_allclose(a.policy_, b.policy_, atol=1e-8)


def test_fit_from_trajectories_and_save_load(env, small, tmp_path):
    trajs = sample_trajectories(small["P"], small["pi_E"], small["p0"], 200, 60, np.random.default_rng(1))
    est = OccupancyNaturalGradientIRL(env, step_size=0.7).fit(trajs)
    assert abs(est.d_E_.sum() - 1 / (1 - small["gamma"])) < 1e-9  # normalised like the learner's
    path = tmp_path / "ng.npz"
    est.save(path)
    back = OccupancyNaturalGradientIRL.load(path)
    np.testing.assert_array_equal(back.reward_, est.reward_)
    np.testing.assert_array_equal(back.history_["dual"], est.history_["dual"])
    assert back.step_size == 0.7
    m = MCEIRL(env, max_iter=5).fit(trajs)
    m.save(tmp_path / "m.npz")
    assert MCEIRL.load(tmp_path / "m.npz").lr == m.lr
    with pytest.raises(ValueError, match="not 'mce_irl'"):
        MCEIRL.load(path)


def test_mirror_descent_policy():
    p = np.array([[0.5, 0.5]])
    q = np.array([[0.9, 0.1]])
    np.testing.assert_allclose(mirror_descent_policy(p, q, 1.0), q)
    mid = mirror_descent_policy(p, q, 0.5)
    np.testing.assert_allclose(mid, np.array([[3, 1]]) / 4)


def test_bad_estimator_input(env):
    for eta in (0.0, 1.5):
        with pytest.raises(ValueError, match="step_size"):
            OccupancyNaturalGradientIRL(env, step_size=eta)
    with pytest.raises(TypeError, match="step_size"):
        OccupancyNaturalGradientIRL(env, step_size="0.5")
    with pytest.raises(ValueError, match="fisher"):
        OccupancyNaturalGradientIRL(env, fisher="exact")
    with pytest.raises(ValueError, match="features must have shape"):
        OccupancyNaturalGradientIRL(env, features=np.zeros((5, 3, 2)))
    with pytest.raises(ValueError, match="optimizer"):
        MCEIRL(env, optimizer="rmsprop")
    with pytest.raises(ValueError, match="lr"):
        MCEIRL(env, lr=-1.0)
    with pytest.raises(TypeError, match="tabular attribute"):
        MCEIRL(object())
    with pytest.raises(RuntimeError, match="fit"):
        OccupancyNaturalGradientIRL(env).save("/nonexistent/x.npz")
