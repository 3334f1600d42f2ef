import math

import numpy as np
import pytest
from mkscp import BonferroniScore, KDEScore, LocalMahalanobisScore, MahalanobisScore, MMDScore
from mkscp.baselines import unit_ball_log_volume
from mkscp.data import sample_residuals
from scipy.spatial.distance import mahalanobis
from scipy.stats import gaussian_kde, multivariate_normal


def test_unit_ball_volume():
    for d, v in ((1, 2.0), (2, math.pi), (3, 4 * math.pi / 3), (4, math.pi**2 / 2)):
        assert math.exp(unit_ball_log_volume(d)) == pytest.approx(v, rel=1e-12)


def test_mahalanobis_matches_scipy(rng):
    E = sample_residuals("gaussian", 300, 3, rng)
    T = rng.normal(size=(20, 3))
    s = MahalanobisScore(reg=0.0).fit(E)
    cov = np.cov(E, rowvar=False, ddof=0)
    ref = [mahalanobis(t, E.mean(0), np.linalg.inv(cov)) ** 2 for t in T]
    np.testing.assert_allclose(s.nonconformity(T), ref, rtol=1e-8)


def test_mahalanobis_volume_matches_gaussian_mass(rng):
    # for N(0, Sigma) the region {s <= chi2 quantile} has volume V_d q^{d/2} sqrt(det Sigma)
    S = np.array([[1.0, 0.3], [0.3, 0.5]])
    E = multivariate_normal(cov=S).rvs(20_000, random_state=1)
    s = MahalanobisScore().fit(E)
    vol = s.closed_form_volume(4.0)[0]
    assert vol == pytest.approx(math.pi * 4.0 * math.sqrt(np.linalg.det(S)), rel=0.03)


def test_local_mahalanobis_with_all_neighbours_is_global(rng):
    X = rng.uniform(size=(200, 1))
    E = sample_residuals("gaussian", 200, 2, rng)
    loc = LocalMahalanobisScore(n_neighbors=200, shrinkage=0.0).fit(E, X=X)
    T, Xt = rng.normal(size=(30, 2)), rng.uniform(size=(30, 1))
    ref = MahalanobisScore(reg=0.0).fit(E).nonconformity(T) * (199 / 200)  # ddof 1 vs 0
    np.testing.assert_allclose(loc.nonconformity(T, X=Xt), ref, rtol=1e-8)
    with pytest.raises(ValueError, match="X is required"):
        loc.nonconformity(T)


def test_local_mahalanobis_adapts_to_heteroscedastic_scale(rng):
    X = rng.uniform(size=(2000, 1))
    E = sample_residuals("heteroscedastic", 2000, 2, rng, x=X[:, 0])
    loc = LocalMahalanobisScore(n_neighbors=100).fit(E, X=X)
    v = loc.closed_form_volume(1.0, np.array([[0.05], [0.95]]))
    assert v[1] > 4 * v[0]  # scale ratio (0.3 + 0.7 * 0.95) / (0.3 + 0.7 * 0.05) ~ 2.9, squared in d=2


def test_kde_score_matches_scipy(rng):
    E = sample_residuals("mixture", 300, 2, rng)
    T = rng.normal(size=(50, 2))
    ref = -np.log(gaussian_kde(E.T)(T.T))
    np.testing.assert_allclose(KDEScore().fit(E).nonconformity(T), ref, rtol=1e-8)


def test_mmd_score_and_limit(rng):
    E = sample_residuals("banana", 200, 2, rng)
    s = MMDScore(lengthscale=0.7).fit(E)
    T = rng.normal(size=(10, 2))
    K = np.exp(-((T[:, None] - E[None]) ** 2).sum(-1) / (2 * 0.49))
    Kee = np.exp(-((E[:, None] - E[None]) ** 2).sum(-1) / (2 * 0.49))
    np.testing.assert_allclose(s.nonconformity(T), 1 - 2 * K.mean(1) + Kee.mean(), rtol=1e-10)
    assert s.nonconformity(np.full((1, 2), 1e4))[0] == pytest.approx(s.limit_at_infinity())


def test_bonferroni_box_covers(rng):
    E, C, T = (sample_residuals("banana", n, 3, rng) for n in (200, 400, 4000))
    b = BonferroniScore().fit(E)
    q = b.calibrate(C, 0.1)
    assert q.shape == (3,)
    assert b.contains(T, q).mean() >= 0.9 - 0.02
    assert b.closed_form_volume(q)[0] == pytest.approx(np.prod(2 * q))
