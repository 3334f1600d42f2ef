"""scikit-learn conventions: check_estimator on every estimator, clone, GridSearchCV, cross_val_score,
the renamed constructor parameter, numpy scalars, score_samples' sign."""

import warnings

import numpy as np
import pytest
from mkscp import (
    BonferroniScore,
    KDEScore,
    LocalMahalanobisScore,
    MahalanobisScore,
    MKSScore,
    MMDScore,
    MultivariateConformalRegressor,
)
from mkscp.data import make_regression
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.neighbors import KernelDensity
from sklearn.utils.estimator_checks import check_estimator

# House rule: bad parameter values raise where they are written (the constructor) as well as in fit
# (set_params bypasses the constructor), which scikit-learn's check_do_not_raise_errors_in_init_or_set_params
# forbids. It is the one check that cannot apply; every other one must pass.
EXPECTED = {"check_do_not_raise_errors_in_init_or_set_params": "parameters are validated at construction (house rule)"}
# check_regressors_train sets alpha=0.01 (it takes alpha for a ridge penalty) on 200 rows: cal_size=0.5 gives the
# 99 calibration points that level needs; alpha=0.5 lets the 10-row checks calibrate.
REGRESSOR = {"alpha": 0.5, "fit_size": 0.2, "cal_size": 0.5, "random_state": 0}


@pytest.mark.parametrize("est", [
    MKSScore(), MKSScore(kernel="matern", n_components=5), MahalanobisScore(), KDEScore(), MMDScore(),
    BonferroniScore(),
    MultivariateConformalRegressor(**REGRESSOR),
    MultivariateConformalRegressor(nonconformity_score="mahalanobis", **REGRESSOR),
], ids=["mks", "mks_nystrom", "mahalanobis", "kde", "mmd", "bonferroni", "regressor_mks", "regressor_mahalanobis"])
def test_check_estimator(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_estimator(est, on_fail=None, on_skip=None, expected_failed_checks=EXPECTED)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in res if r["status"] == "failed"]
    assert not failed
    assert len(res) > 35


def test_local_mahalanobis_needs_x_everywhere():
    # not run through check_estimator: every call needs the features X, which its checks never pass
    E, X = np.random.default_rng(0).normal(size=(50, 2)), np.random.default_rng(1).uniform(size=(50, 1))
    s = LocalMahalanobisScore(n_neighbors=10)
    with pytest.raises(ValueError, match="X is required"):
        s.fit(E)
    s.fit(E, X=X)
    with pytest.raises(ValueError, match="X is required"):
        s.nonconformity(E)
    assert clone(s).get_params() == s.get_params() and s.n_features_in_ == 2


@pytest.fixture(scope="module")
def data():
    return make_regression("banana", 1200, 2, np.random.default_rng(3))


def test_cross_val_score_and_grid_search(data):
    X, Y = data
    cp = MultivariateConformalRegressor(Ridge(), "mahalanobis", alpha=0.2, random_state=0)
    cv = cross_val_score(cp, X, Y, cv=KFold(3))
    assert cv.shape == (3,) and np.all(np.isfinite(cv)) and np.all(cv < 0)
    # the score is minus the mean region volume (closed form for the ellipsoid)
    fitted = clone(cp).fit(X, Y)
    assert fitted.score(X[:5], Y[:5]) == pytest.approx(-fitted.nonconformity_score_.closed_form_volume(
        fitted.threshold_)[0])
    gs = GridSearchCV(MultivariateConformalRegressor(Ridge(), alpha=0.2, random_state=0),
                      {"nonconformity_score": ["mks", "mahalanobis", "bonferroni"]}, cv=KFold(2)).fit(X, Y)
    means = gs.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(means))
    # banana residuals: the box is the largest region, and the search picks the smallest (highest score)
    assert gs.best_params_["nonconformity_score"] == ["mks", "mahalanobis", "bonferroni"][int(np.argmax(means))]
    assert means[2] < means[1]


def test_renamed_parameter_keeps_a_deprecation_alias(data):
    X, Y = data
    with pytest.warns(FutureWarning, match="renamed `nonconformity_score`"):
        old = MultivariateConformalRegressor(Ridge(), score="mahalanobis", random_state=0)
    assert old.nonconformity_score == "mahalanobis" and "score" not in old.get_params()
    assert callable(old.score)  # the method is no longer shadowed
    with pytest.warns(FutureWarning):
        old.set_params(score="bonferroni")
    assert old.nonconformity_score == "bonferroni"
    with pytest.raises(TypeError, match="unexpected keyword"):
        MultivariateConformalRegressor(Ridge(), scor="mks")


def test_numpy_scalars_and_1d_targets(data):
    X, Y = data
    a = MultivariateConformalRegressor(Ridge(), "mahalanobis", alpha=np.float32(0.5), fit_size=np.float64(0.25),
                                       random_state=np.int64(0)).fit(X, Y)
    b = MultivariateConformalRegressor(Ridge(), "mahalanobis", alpha=0.5, random_state=0).fit(X, Y)
    assert a.threshold_ == pytest.approx(b.threshold_)
    one = MultivariateConformalRegressor(Ridge(), random_state=0).fit(X, Y[:, 0])
    assert one.predict(X[:4]).shape == (4,) and one.n_outputs_ == 1 and one.n_features_in_ == 1


def test_score_samples_sign_matches_kernel_density():
    # higher = more normal, as scikit-learn's KernelDensity.score_samples (log density)
    rng = np.random.default_rng(0)
    E, T = rng.normal(size=(300, 2)), rng.normal(size=(200, 2)) * 1.5
    kd = KernelDensity(bandwidth=0.5).fit(E).score_samples(T)
    for s in (MKSScore(), MahalanobisScore(), KDEScore(), MMDScore()):
        ours = s.fit(E).score_samples(T)
        assert np.corrcoef(np.argsort(np.argsort(ours)), np.argsort(np.argsort(kd)))[0, 1] > 0.8, type(s).__name__
