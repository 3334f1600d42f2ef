import numpy as np
import pytest
import shap
from entropyshap import ARGARCHSampler, EntropyExplainer, LinearGaussianModel, SamplerModel, decompose
from entropyshap.baselines import averaged_entropy_shapley, interventional_shap, trace_shap
from entropyshap.data import oracle
from entropyshap.run import analytic_values


@pytest.fixture(scope="session")
def closed(lin3, gauss_bg):
    ex = EntropyExplainer(lin3, gauss_bg, estimator="gaussian")
    ex.x_cov = np.eye(3)  # the population moments: compare with the analytic values
    return decompose(ex, np.zeros((1, 3)))


def test_smoke_closed_form_p3_identities(closed, lin3):
    ref = analytic_values(lin3)  # shapiq's ExactComputer on each game
    d = 2
    np.testing.assert_allclose(closed["joint"][0], ref[:, 0], atol=1e-10)
    np.testing.assert_allclose(closed["marginal"][0], ref[:, 1:d + 1], atol=1e-10)
    np.testing.assert_allclose(closed["tc"][0], ref[:, -1], atol=1e-10)
    assert np.max(np.abs(closed["residual"])) < 1e-8
    np.testing.assert_allclose(closed["ordered"][0].sum(-1), closed["joint"][0], atol=1e-10)
    assert np.all(np.abs(closed["joint"][0, 2]) < 1e-12)  # null feature
    assert abs(closed["marginal"][0, 1, 1]) < 1e-12  # x2 loads on Y1 only
    assert abs(closed["tc"][0, 0]) > 0.05  # the shared direction carries the cross term
    assert closed["joint"][0, 0] < 0  # informative features reduce entropy: negative values


@pytest.mark.parametrize("game", ["joint", "marginal", "ordered", "tc"])
def test_efficiency_every_game(lin3, gauss_bg, game):
    ex = EntropyExplainer(lin3, gauss_bg, game=game, estimator="gaussian")
    e = ex(np.zeros((2, 3)))
    full = ex._select(ex.coalition_values(np.zeros((1, 3)), np.array([7]))[0, 0])
    np.testing.assert_allclose(e.values.sum(1)[0], full - e.base_values[0], atol=1e-8)
    assert isinstance(e, shap.Explanation)
    assert e.values.shape == ((2, 3) if game in ("joint", "tc") else (2, 3, 2))


def test_order_invariance(lin3, gauss_bg):
    W, S = lin3.W, lin3.noise_cov
    rev = LinearGaussianModel(W[::-1], S[::-1, ::-1])
    a = decompose(EntropyExplainer(lin3, gauss_bg), np.zeros((1, 3)))
    b = decompose(EntropyExplainer(rev, gauss_bg), np.zeros((1, 3)))
    np.testing.assert_allclose(a["joint"], b["joint"], atol=1e-10)
    np.testing.assert_allclose(a["marginal"], b["marginal"][..., ::-1], atol=1e-10)
    assert np.max(np.abs(a["ordered"] - b["ordered"][..., ::-1])) > 1e-3


def test_mc_matches_closed_form_and_trap_differs(closed, lin3, gauss_bg):
    ex = EntropyExplainer(lin3, gauss_bg, estimator="mc", n_components=256, n_mc=1024, seed=0)
    mc = decompose(ex, np.zeros((1, 3)))
    scale = np.max(np.abs(closed["joint"]))
    assert np.max(np.abs(mc["joint"] - closed["joint"])) < 0.1 * scale
    assert np.max(np.abs(mc["tc"] - closed["tc"])) < 0.1 * scale
    avg = averaged_entropy_shapley(lin3, gauss_bg[:64], np.zeros((1, 3)))[0]
    assert np.max(np.abs(avg[:, 0] - closed["joint"][0])) > 0.5 * scale  # averaged entropies: all zero here


def test_conditional_removal_uses_background_moments(lin3):
    rng = np.random.default_rng(5)
    A = np.array([[1.0, 0.0, 0.0], [0.95, 0.31, 0.0], [0.0, 0.0, 1.0]])
    bg = rng.standard_normal((20000, 3)) @ A.T + 3.0  # correlated, not N(0, I)
    x = np.zeros((1, 3)) + 3
    ex = EntropyExplainer(lin3, bg, removal="conditional")
    # independent computation for S = {x1}: Cov(X_{23} | x1) from the background's covariance
    C = np.cov(bg, rowvar=False)
    R = [1, 2]
    cond = C[np.ix_(R, R)] - np.outer(C[R, 0], C[0, R]) / C[0, 0]
    cov_y = lin3.W[:, R] @ cond @ lin3.W[:, R].T + lin3.noise_cov
    h = 0.5 * np.log(np.linalg.det(2 * np.pi * np.e * cov_y))
    assert ex.coalition_values(x, np.array([1]))[0, 0, 0] == pytest.approx(h, abs=1e-10)
    closed = ex.global_values(x)
    inter = EntropyExplainer(lin3, bg, removal="interventional").global_values(x)
    mc = EntropyExplainer(lin3, bg, removal="conditional", estimator="mc", n_components=256, n_mc=2048,
                          seed=0).global_values(x)
    assert np.max(np.abs(mc - closed)) < 0.1 * np.max(np.abs(closed))
    assert np.max(np.abs(inter - closed)) > 0.05  # x2 is nearly a copy of x1: the removals differ


def test_knn_within_tolerance_at_5000(closed, lin3, gauss_bg):
    ex = EntropyExplainer(lin3, gauss_bg, estimator="knn", n_components=5000, n_samples=5000, seed=0)
    kn = decompose(ex, np.zeros((1, 3)))
    scale = np.max(np.abs(closed["joint"]))
    for g in ("joint", "tc"):
        assert np.max(np.abs(kn[g] - closed[g])) < 0.15 * scale
    assert np.max(np.abs(kn["residual"])) < 0.15 * scale  # KSG TC is estimated on its own


def test_permutation_converges_to_exact(lin3, gauss_bg):
    exact = EntropyExplainer(lin3, gauss_bg, game="marginal").global_values(np.zeros((1, 3)))
    perm = EntropyExplainer(lin3, gauss_bg, game="marginal", algorithm="permutation", n_permutations=200,
                            seed=0).global_values(np.zeros((1, 3)))
    np.testing.assert_allclose(perm, exact, atol=0.02 * np.max(np.abs(exact)))


def test_dependence_only_feature():
    """x3 sets only the correlation: ≈ 0 from component-wise and trace baselines, a non-zero cross term."""
    rng = np.random.default_rng(2)
    bg, pts = rng.standard_normal((64, 4)), rng.standard_normal((3, 4))
    dec = decompose(EntropyExplainer(oracle, bg, estimator="mc", n_components=64, n_mc=256, seed=0), pts)
    assert np.max(np.abs(dec["marginal"][:, 2].sum(-1))) < 1e-10
    assert np.max(np.abs(trace_shap(oracle, bg, pts, engine="own")[:, 2])) < 1e-10
    assert np.min(np.abs(dec["tc"][:, 2])) > 0.02
    np.testing.assert_allclose(dec["joint"][:, 2], -dec["tc"][:, 2], atol=1e-10)


def test_own_interventional_shap_matches_definition(rng):
    f = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2] ** 2  # noqa: E731
    bg, x = rng.normal(size=(5, 3)), rng.normal(size=(1, 3))
    phi = interventional_shap(f, bg, x)[0]
    # efficiency against the background mean
    assert phi.sum() == pytest.approx(f(x)[0] - f(bg).mean())
    # x3's term is additive: exactly x3² − mean b3²
    assert phi[2] == pytest.approx(x[0, 2] ** 2 - np.mean(bg[:, 2] ** 2))


def test_sampler_ar1_last_lag():
    smp = ARGARCHSampler(0.8, horizon=3, n_samples=30, seed=0)
    rng = np.random.default_rng(0)
    bg, pts = smp.simulate(100, 4, rng), smp.simulate(1, 4, rng)
    e = EntropyExplainer(SamplerModel(smp, horizon=3), bg, n_components=100, seed=0)(pts)
    assert e.values[0, -1] == pytest.approx(0.5 * np.log(1 - 0.64), abs=0.15)
    assert np.max(np.abs(e.values[0, :-1])) < 0.15


# bad input ------------------------------------------------------------------------------------------

def test_bad_inputs(lin3, gauss_bg):
    with pytest.raises(ValueError, match="positive definite"):
        LinearGaussianModel(np.ones((2, 3)), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="3 columns"):
        EntropyExplainer(lin3, gauss_bg)(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="permutation"):
        EntropyExplainer(LinearGaussianModel(np.ones((2, 17)), np.eye(2)), np.zeros((3, 17)) + np.arange(3)[:, None])
    with pytest.raises(ValueError, match="n_samples"):
        EntropyExplainer(lin3, gauss_bg, estimator="knn", n_samples=50)
    with pytest.raises(ValueError, match="game"):
        EntropyExplainer(lin3, gauss_bg, game="entropy")
    with pytest.raises(TypeError, match="background"):
        EntropyExplainer(lin3, "bg.csv")
    with pytest.raises(ValueError, match="gaussian"):
        EntropyExplainer(oracle, gauss_bg[:, :4].repeat(2, 1)[:, :4], estimator="gaussian")
    with pytest.raises(ValueError, match="sampler must return"):
        bad = SamplerModel(lambda c: np.zeros((10, 2)), horizon=3)
        EntropyExplainer(bad, gauss_bg[:50])(gauss_bg[:1])
    with pytest.raises(ValueError, match="positive definite"):
        EntropyExplainer(lambda Z: (np.zeros((len(Z), 2)), np.broadcast_to(-np.eye(2), (len(Z), 2, 2))),
                         gauss_bg[:50], estimator="mc")(gauss_bg[:1])


def test_nan_background_rows_skipped_and_counted(lin3, gauss_bg):
    bg = gauss_bg[:20].copy()
    bg[[3, 7]] = np.nan
    with pytest.warns(UserWarning, match="skipped 2 row"):
        ex = EntropyExplainer(lin3, bg)
    assert ex.n_skipped_background_ == 2 and len(ex.background) == 18
