import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mkscp import MahalanobisScore, MKSScore
from mkscp.data import sample_residuals
from mkscp.identities import gp_posterior_variance, mmd_minus_kpca
from mkscp.kernels import pairwise_kernel
from scipy.stats import spearmanr
from sklearn.exceptions import NotFittedError


@pytest.fixture
def data(rng):
    E = sample_residuals("banana", 150, 3, rng)
    T = np.vstack([sample_residuals("banana", 60, 3, rng), 3 * rng.normal(size=(20, 3))])
    return E, T


@pytest.mark.parametrize("kernel", ["rbf", "matern"])
def test_score_is_centred_gp_posterior_variance(data, kernel):
    E, T = data
    s = MKSScore(kernel=kernel, rank_tol=0.0).fit(E)
    ref = gp_posterior_variance(E, T, kernel=kernel, lengthscale=s.lengthscale_, gamma=s.gamma_)
    np.testing.assert_allclose(s.nonconformity(T), ref, rtol=1e-6, atol=1e-9 * ref.max())


def test_score_is_schur_complement_of_joint_covariance(data):
    # brute force: the conditional variance of f(e) given y = f(X) + noise is 1 / [Sigma^{-1}]_00
    E, T = data
    s = MKSScore(lengthscale=0.8, gamma=0.3, rank_tol=0.0).fit(E)
    K = pairwise_kernel(np.vstack([E, T[:5]]), np.vstack([E, T[:5]]), lengthscale=0.8)
    n = len(E)
    H = np.eye(len(K)) - np.r_[np.ones(n), np.zeros(5)][None, :] / n  # centre on the fit points
    Kc = H @ K @ H.T
    for j in range(5):
        idx = np.r_[n + j, np.arange(n)]
        S = Kc[np.ix_(idx, idx)] + np.diag(np.r_[0.0, np.full(n, 0.3)])
        S[0, 0] += 1e-12
        var = 1.0 / np.linalg.inv(S)[0, 0]
        assert s.nonconformity(T[j:j + 1])[0] == pytest.approx(var, rel=1e-6, abs=1e-10)


def test_score_is_mmd_minus_kpca(data):
    E, T = data
    s = MKSScore(rank_tol=0.0).fit(E)
    ref = mmd_minus_kpca(E, T, lengthscale=s.lengthscale_, gamma=s.gamma_)
    dec = s.decompose(T)
    np.testing.assert_allclose(dec["mmd2"], ref["mmd2"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dec["score"], ref["score"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dec["score"], s.nonconformity(T), rtol=1e-8, atol=1e-12)
    assert np.all(dec["kpca"] >= 0)


def test_linear_kernel_is_regularised_mahalanobis(rng):
    E = rng.normal(size=(300, 3)) @ np.array([[1.0, 0.0, 0.0], [0.8, 0.5, 0.0], [0.1, -0.3, 0.4]])
    T = rng.normal(size=(200, 3)) * 1.5
    s = MKSScore(kernel="linear", gamma=1e-3, rank_tol=0.0).fit(E)
    D, Dt = E - E.mean(0), T - E.mean(0)
    closed = 1e-3 * np.einsum("ij,jk,ik->i", Dt, np.linalg.inv(D.T @ D + 1e-3 * np.eye(3)), Dt)
    np.testing.assert_allclose(s.nonconformity(T), closed, rtol=1e-6)
    maha = MahalanobisScore().fit(E).nonconformity(T)
    assert spearmanr(s.nonconformity(T), maha).statistic > 0.9999
    np.testing.assert_array_equal(np.argsort(s.nonconformity(T)), np.argsort(maha))


def test_rank_truncation_error_is_bounded(data):
    E, T = data
    full = MKSScore(rank_tol=0.0).fit(E)
    cut = MKSScore(rank_tol=1e-3).fit(E)
    assert cut.rank_ < full.rank_
    mmd2 = full.decompose(T)["mmd2"]
    assert np.all(np.abs(cut.nonconformity(T) - full.nonconformity(T)) <= 1e-3 * mmd2 + 1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "matern"])
def test_limit_at_infinity(data, kernel):
    E, _ = data
    s = MKSScore(kernel=kernel).fit(E)
    far = s.nonconformity(np.full((1, 3), 1e4))[0]
    assert far == pytest.approx(s.limit_at_infinity(), rel=1e-9)
    assert np.all(s.nonconformity(E) < s.limit_at_infinity())
    assert MKSScore(kernel="linear").fit(E).limit_at_infinity() == np.inf


def test_nystrom_with_all_landmarks_is_exact(data):
    E, T = data
    exact = MKSScore(gamma=0.5, rank_tol=0.0).fit(E)
    nys = MKSScore(gamma=0.5, n_components=len(E)).fit(E)
    np.testing.assert_allclose(nys.nonconformity(T), exact.nonconformity(T), rtol=1e-5, atol=1e-8)
    assert nys.limit_at_infinity() == pytest.approx(exact.limit_at_infinity(), rel=1e-5)


def test_nystrom_ranks_like_exact(rng):
    E = sample_residuals("mixture", 800, 2, rng)
    T = sample_residuals("mixture", 500, 2, rng)
    exact = MKSScore().fit(E)
    nys = MKSScore(n_components=150, gamma=exact.gamma_).fit(E)
    assert spearmanr(nys.nonconformity(T), exact.nonconformity(T)).statistic > 0.97


def test_translation_invariance(data):
    E, T = data
    shift = np.array([5.0, -3.0, 2.0])
    a = MKSScore().fit(E).nonconformity(T)
    b = MKSScore().fit(E + shift).nonconformity(T + shift)
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["rbf", "matern"]), st.floats(0.3, 3.0))
def test_score_between_zero_and_mmd2(seed, kernel, ls):
    r = np.random.default_rng(seed)
    E, T = r.normal(size=(40, 2)), r.normal(size=(30, 2)) * 2
    s = MKSScore(kernel=kernel, lengthscale=ls, rank_tol=0.0).fit(E)
    sc, mmd2 = s.nonconformity(T), s.decompose(T)["mmd2"]
    assert np.all(sc >= -1e-10)
    assert np.all(sc <= mmd2 + 1e-10)


def test_bad_input(data):
    E, _ = data
    with pytest.raises(ValueError, match="kernel"):
        MKSScore(kernel="cosine")
    with pytest.raises(ValueError, match="gamma"):
        MKSScore(gamma=-1.0)
    with pytest.raises(ValueError, match="lengthscale"):
        MKSScore(lengthscale=0)
    with pytest.raises(ValueError, match="n_components"):
        MKSScore(n_components=0)
    with pytest.raises(ValueError, match="gamma must be 'auto' or a positive number"):
        MKSScore(gamma="0.5")
    with pytest.raises(TypeError, match="n_components"):
        MKSScore(n_components=2.0)  # no coercion of strings
    with pytest.raises(NotFittedError):
        MKSScore().nonconformity(E)
    s = MKSScore().fit(E)
    with pytest.raises(ValueError, match="X has 2 features, but MKSScore is expecting 3"):
        s.nonconformity(np.zeros((2, 2)))
    bad = E.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MKSScore().fit(bad)
    with pytest.raises(ValueError, match="identical"):
        MKSScore().fit(np.ones((10, 2)))
    with pytest.raises(ValueError):
        MKSScore().fit("abc")
    with pytest.raises(ValueError, match="1 sample"):
        MKSScore().fit(E[:1])


def test_set_params_is_checked_in_fit(data):
    E, _ = data
    s = MKSScore()
    s.set_params(gamma=-1.0)  # set_params bypasses the constructor: fit checks
    with pytest.raises(ValueError, match="gamma must be > 0"):
        s.fit(E)
    s.set_params(gamma=0.3, n_components=np.int64(50), gamma_quantile=np.float32(0.8))
    assert s.fit(E).gamma_ == pytest.approx(0.3)
    with pytest.raises(ValueError, match="rank_tol"):
        MKSScore().set_params(rank_tol=-1).fit(E)


def test_numpy_scalars_are_accepted(data):
    E, T = data
    a = MKSScore(lengthscale=np.float32(0.8), gamma=np.float64(0.2), nu=np.float32(1.5), kernel="matern")
    b = MKSScore(lengthscale=0.8, gamma=0.2, nu=1.5, kernel="matern")
    np.testing.assert_allclose(a.fit(E).nonconformity(T), b.fit(E).nonconformity(T), rtol=1e-6)


def test_score_samples_has_sklearns_sign(data):
    E, T = data
    s = MKSScore().fit(E)
    np.testing.assert_array_equal(s.score_samples(T), -s.nonconformity(T))
    # higher = more normal: the fit residuals' centre scores above a far point, as in KernelDensity
    assert s.score_samples(E.mean(0, keepdims=True))[0] > s.score_samples(E.mean(0, keepdims=True) + 10)[0]
    assert s.n_features_in_ == 3 == s.dim_
