import math
import warnings

import numpy as np
import pytest
from mkscp import (
    MKSScore,
    MultivariateConformalRegressor,
    UnboundedRegionWarning,
    conformal_quantile,
    min_calibration_size,
)
from mkscp.data import make_regression, sample_residuals
from mkscp.volume import box_points, monte_carlo_volume
from scipy.stats import binom
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.multioutput import MultiOutputRegressor
from sklearn.tree import DecisionTreeRegressor


def test_conformal_quantile_matches_definition(rng):
    for n in (9, 10, 57, 200):
        s = rng.normal(size=n)
        for alpha in (0.05, 0.1, 0.2, 0.5):
            if n < min_calibration_size(alpha):
                continue
            k = math.ceil((1 - alpha) * (n + 1) - 1e-12)
            assert conformal_quantile(s, alpha) == np.sort(s)[k - 1]
            # brute force: the smallest observed q with #{s <= q} >= (1 - alpha)(n + 1)
            brute = min(q for q in s if np.sum(s <= q) >= (1 - alpha) * (n + 1) - 1e-9)
            assert conformal_quantile(s, alpha) == brute


def test_min_calibration_size_brute_force():
    for alpha in (0.5, 0.2, 0.1, 0.05, 0.01, 0.3):
        n = min_calibration_size(alpha)
        assert math.ceil((1 - alpha) * (n + 1) - 1e-12) <= n
        assert n == 1 or math.ceil((1 - alpha) * n - 1e-12) > n - 1
    with pytest.raises(ValueError, match="needs at least 19 calibration points, got 10"):
        conformal_quantile(np.arange(10.0), 0.05)


def test_split_coverage_against_binomial_bound():
    # one test point per repetition: the indicators are iid Bernoulli(p) with p >= 1 - alpha
    reps, alpha, hits = 300, 0.1, 0
    for rep in range(reps):
        r = np.random.default_rng([rep, 1])
        Ef, Ec, Et = (sample_residuals("banana", m, 2, r) for m in (60, 60, 1))
        s = MKSScore().fit(Ef)
        hits += bool(s.nonconformity(Et)[0] <= s.calibrate(Ec, alpha))
    assert binom.cdf(hits, reps, 1 - alpha) > 1e-3, f"{hits}/{reps} covered"


def test_same_set_fit_undercovers():
    # the official code's flaw: fit the score on the calibration residuals themselves
    reps, alpha, n, good, bad = 40, 0.1, 100, [], []
    for rep in range(reps):
        r = np.random.default_rng([rep, 2])
        Ef, Ec, Et = (sample_residuals("banana", m, 2, r) for m in (n, n, 400))
        for s_fit, out in ((Ef, good), (Ec, bad)):
            s = MKSScore().fit(s_fit)
            out.append(np.mean(s.nonconformity(Et) <= s.calibrate(Ec, alpha)))
    gap = np.array(good) - np.array(bad)  # paired: the same calibration and test residuals
    assert gap.mean() > 3 * gap.std(ddof=1) / np.sqrt(reps), gap.mean()
    assert np.mean(bad) < 1 - alpha <= np.mean(good) + 2 * np.std(good, ddof=1) / np.sqrt(reps)


@pytest.mark.parametrize("estimator", [Ridge(), MultiOutputRegressor(DecisionTreeRegressor(max_depth=3))])
@pytest.mark.parametrize("score", ["mks", "mahalanobis", "bonferroni", "local_mahalanobis", "kde", "mmd"])
def test_regressor_api(estimator, score, rng):
    X, Y = make_regression("mixture", 900, 2, rng)
    params = {"n_neighbors": 30} if score == "local_mahalanobis" else None
    cp = MultivariateConformalRegressor(estimator, nonconformity_score=score, alpha=0.2, score_params=params, random_state=0)
    cp.fit(X, Y)
    Xt, Yt = make_regression("mixture", 300, 2, rng)
    inside = cp.contains(Xt, Yt)
    assert inside.shape == (300,) and inside.dtype == bool
    assert 0.6 < inside.mean() <= 1.0
    assert cp.predict(Xt).shape == (300, 2)
    s = cp.nonconformity(Xt, Yt)
    assert s.shape[0] == 300
    vol = cp.region_volume(Xt[:4], n_points=4000)
    assert vol.shape == (4,) and np.all(np.isfinite(vol)) and np.all(vol > 0)
    assert clone(cp).get_params()["alpha"] == 0.2


def test_explicit_sets_and_prefit(rng):
    X, Y = make_regression("banana", 1200, 3, rng)
    model = Ridge().fit(X[:400], Y[:400])
    a = MultivariateConformalRegressor(model, prefit=True, fit_size=0.5, cal_size=0.5, random_state=1)
    a.fit(X[400:], Y[400:])
    assert a.n_fit_ + a.n_calibration_ == 800
    b = MultivariateConformalRegressor(Ridge(), alpha=0.1)
    b.fit(X[:400], Y[:400], fit_set=(X[400:800], Y[400:800]), calib_set=(X[800:], Y[800:]))
    assert b.n_fit_ == 400 and b.n_calibration_ == 400
    assert b.score_.n_fit_ == 400


def test_bad_input(rng):
    X, Y = make_regression("banana", 200, 2, rng)
    cp = MultivariateConformalRegressor(Ridge())
    with pytest.raises(ValueError, match="dim 3"):
        cp.fit(X, Y[:, :, None])
    with pytest.raises(ValueError, match="same number of rows"):
        cp.fit(X, Y[:-1])
    Yn = Y.copy()
    Yn[3, 1] = np.nan
    with pytest.raises(ValueError, match="Y contains NaN"):
        cp.fit(X, Yn)
    for a in (0.0, 1.0, 1.5, -0.1, np.nan):
        with pytest.raises(ValueError, match="alpha must be"):
            MultivariateConformalRegressor(Ridge(), alpha=a)
        with pytest.raises(ValueError, match="alpha must be"):  # set_params bypasses __init__: fit checks
            MultivariateConformalRegressor(Ridge()).set_params(alpha=a).fit(X, Y)
    with pytest.raises(TypeError, match="alpha"):
        MultivariateConformalRegressor(Ridge(), alpha="0.1")
    with pytest.raises(ValueError, match=r"needs at least 99 calibration points, got 50 \(n_samples = 200"):
        MultivariateConformalRegressor(Ridge(), alpha=0.01).fit(X, Y)
    with pytest.raises(ValueError, match="nonconformity_score must be one of"):
        MultivariateConformalRegressor(Ridge(), nonconformity_score="oops")
    with pytest.raises(ValueError, match="nonconformity_score must be one of"):
        MultivariateConformalRegressor(Ridge()).set_params(nonconformity_score="oops").fit(X, Y)
    with pytest.raises(ValueError, match="both fit_set and calib_set"):
        cp.fit(X, Y, fit_set=(X, Y))
    cp.fit(X, Y)
    with pytest.raises(ValueError, match="2 columns"):
        cp.contains(X, np.c_[Y, Y])
    with pytest.raises(ValueError, match="X has 2 features, but MultivariateConformalRegressor is expecting 1"):
        cp.predict(np.c_[X, X])
    with pytest.raises(ValueError, match="requires y to be passed"):
        MultivariateConformalRegressor().fit(X, None)


def test_unbounded_region_is_flagged_not_small(rng):
    Ef = sample_residuals("banana", 200, 2, rng)
    Ec = np.vstack([sample_residuals("banana", 18, 2, rng), [[1e6, 1e6]]])  # one far calibration residual
    s = MKSScore().fit(Ef)
    q = s.calibrate(Ec, 0.05)  # the 19th of 19: the far point's score = s_inf
    assert q >= s.limit_at_infinity()
    assert not s.is_bounded(q)
    pts = box_points(Ef.min(0) - 1, Ef.max(0) + 1, 5000, rng)
    assert np.isfinite(pts.estimate(s.contains(pts.points, q))["volume"])  # the trap: a finite box number
    with pytest.warns(UnboundedRegionWarning, match="unbounded"):
        est = monte_carlo_volume(s, q, pts)
    assert est["volume"] == math.inf


def test_regressor_unbounded_volume_is_inf(rng):
    X, Y = make_regression("banana", 219, 2, rng)
    Y[-1] = 1e6
    Xf, Yf = X[:200], Y[:200]
    cp = MultivariateConformalRegressor(Ridge(), alpha=0.05)
    with pytest.warns(UnboundedRegionWarning):
        cp.fit(Xf[:100], Yf[:100], fit_set=(Xf[100:], Yf[100:]), calib_set=(X[200:], Y[200:]))
    assert not cp.bounded_
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        vol = cp.region_volume(X[:3])
    assert np.all(vol == math.inf)
    assert any(issubclass(x.category, UnboundedRegionWarning) for x in w)
