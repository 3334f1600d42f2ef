"""The policies are scikit-learn estimators: clone, get/set_params, GridSearchCV over ε, Pipeline,
and scikit-learn's own conformance suite (check_estimator)."""

import numpy as np
import pytest
from robustpredict import (
    FixedShading,
    FollowThePrediction,
    HouseFlipping,
    PostedPricing,
    RICh,
    RobustPolicy,
    SkiRental,
    shade_grid,
)
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import check_estimator

# house rule: bad values raise where they are written (the constructor), which scikit-learn's
# check_do_not_raise_errors_in_init_or_set_params forbids; every other check must pass
EXPECTED = {"check_do_not_raise_errors_in_init_or_set_params": "parameters are validated at construction"}


def first_column(X):  # module level: picklable
    return np.asarray(X, dtype=float)[:, 0]


def first_three(X):
    return np.asarray(X)[:, :3]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = np.maximum(5 + X @ np.array([1.0, 0.5, 0.0]) + 0.2 * rng.standard_t(4, 3000), 0)
    model = Ridge().fit(X[:1000], y[:1000])
    return X, y, model


@pytest.mark.parametrize("est", [
    RobustPolicy(PostedPricing(), first_column, epsilon="auto"),
    RobustPolicy(SkiRental(), first_column, epsilon="conformal"),
    RobustPolicy(HouseFlipping(), first_column, epsilon="cv"),
    RobustPolicy(PostedPricing(), first_column, epsilon=0.3),
    FollowThePrediction(SkiRental(), first_column),
    FixedShading(HouseFlipping(), first_column),
    RICh(first_column),
], ids=["auto", "conformal", "cv", "number", "ftp", "shading", "ric_h"])
def test_check_estimator(est):
    res = check_estimator(est, on_fail=None, on_skip=None, expected_failed_checks=EXPECTED)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in res if r["status"] == "failed"]
    assert not failed
    assert len(res) > 30


def test_clone_get_set_params(data):
    X, y, model = data
    pol = RobustPolicy(PostedPricing(), model, epsilon="cv", cv=4, random_state=1).fit(X[1000:2000], y[1000:2000])
    c = clone(pol)
    assert c.predictor is model  # the fitted black box is shared, never refit or reset
    assert not hasattr(c, "epsilon_")
    assert c.get_params(deep=False) == pol.get_params(deep=False) | {"problem": c.problem}
    assert "predictor__alpha" in pol.get_params(deep=True)
    c.set_params(epsilon=0.25)
    np.testing.assert_allclose(c.predict(X[:5]), np.maximum(model.predict(X[:5]) - 0.25, 0))
    with pytest.raises(ValueError, match="epsilon"):
        c.set_params(epsilon="huge").fit(X[1000:2000], y[1000:2000])  # set_params bypasses __init__: fit checks
    with pytest.raises(ValueError, match="not fitted"):
        RobustPolicy(PostedPricing(), Ridge())


def test_grid_search_over_epsilon_matches_cv_rule(data):
    """GridSearchCV over ε with the policies' score (−mean regret) picks what epsilon='cv' picks."""
    X, y, model = data
    Xc, yc = X[1000:2000], y[1000:2000]
    folds = KFold(5, shuffle=True, random_state=3)
    grid = shade_grid(yc)
    gs = GridSearchCV(RobustPolicy(PostedPricing(), model, epsilon=0.0), {"epsilon": list(grid)}, cv=folds).fit(Xc, yc)
    cv = RobustPolicy(PostedPricing(), model, epsilon="cv", cv=5, random_state=3).fit(Xc, yc)
    assert gs.best_params_["epsilon"] == pytest.approx(cv.epsilon_)
    np.testing.assert_allclose(-gs.cv_results_["mean_test_score"], cv.cv_scores_, rtol=1e-10)
    # and the tuned ε beats the untuned extremes out of sample
    te = slice(2000, None)
    assert gs.best_estimator_.score(X[te], y[te]) > RobustPolicy(PostedPricing(), model, epsilon=0.0).score(X[te], y[te])
    assert gs.best_estimator_.score(X[te], y[te]) > RobustPolicy(PostedPricing(), model, epsilon=grid[-1]).score(X[te], y[te])


def test_pipeline_and_cross_val_score(data):
    X, y, model = data
    Xw = np.hstack([X, np.zeros((X.shape[0], 2))])  # extra columns the predictor never saw
    pipe = make_pipeline(FunctionTransformer(first_three), RobustPolicy(SkiRental(5.0), model, epsilon="conformal"))
    pipe.fit(Xw[1000:2000], y[1000:2000])
    direct = RobustPolicy(SkiRental(5.0), model, epsilon="conformal").fit(X[1000:2000], y[1000:2000])
    np.testing.assert_allclose(pipe.predict(Xw[2000:]), direct.predict(X[2000:]))
    rules = ["auto", "conformal", "cv"]
    folds = KFold(3, shuffle=True, random_state=0)
    gs = GridSearchCV(pipe, {"robustpolicy__epsilon": rules}, cv=folds).fit(Xw[1000:2000], y[1000:2000])
    # the same choice by hand: each rule's mean held-out score over the same folds
    by_hand = [cross_val_score(clone(pipe).set_params(robustpolicy__epsilon=r), Xw[1000:2000], y[1000:2000],
                               cv=folds).mean() for r in rules]
    assert gs.best_params_["robustpolicy__epsilon"] == rules[int(np.argmax(by_hand))]
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], by_hand)
    scores = cross_val_score(FixedShading(SkiRental(5.0), model), X[1000:2000], y[1000:2000], cv=3)
    assert scores.shape == (3,) and np.all(scores <= 0)


def test_inputs_of_any_float_dtype_and_width_checks(data):
    X, y, model = data
    pol = RobustPolicy(PostedPricing(), first_column, epsilon="auto").fit(X[1000:2000], y[1000:2000])
    a64 = pol.predict(X[2000:2100])
    np.testing.assert_allclose(pol.predict(X[2000:2100].astype(np.float32)), a64, rtol=1e-6)
    pol32 = RobustPolicy(PostedPricing(), first_column, epsilon="auto").fit(X[1000:2000].astype(np.float32),
                                                                            y[1000:2000].astype(np.float32))
    assert pol32.epsilon_ == pytest.approx(pol.epsilon_, rel=1e-5)
    with pytest.raises(ValueError, match="features"):
        pol.predict(X[:5, :2])
    with pytest.raises(ValueError, match="2D"):
        pol.predict(X[:5, 0])
    with pytest.raises(ValueError, match="NaN"):
        pol.fit(np.full((5, 3), np.nan), np.ones(5))
    with pytest.raises(NotFittedError):
        RobustPolicy(PostedPricing(), first_column, epsilon="cv").predict(X[:5])


def test_data_frames_reach_the_predictor_with_their_columns(data):
    import warnings

    import pandas as pd
    X, y, _ = data
    cols = ["a", "b", "c"]
    model = Ridge().fit(pd.DataFrame(X[:1000], columns=cols), y[:1000])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "X does not have valid feature names"
        pol = RobustPolicy(PostedPricing(), model, epsilon="cv").fit(pd.DataFrame(X[1000:2000], columns=cols),
                                                                     y[1000:2000])
        a = pol.predict(pd.DataFrame(X[2000:], columns=cols))
    np.testing.assert_allclose(a, np.maximum(model.predict(pd.DataFrame(X[2000:], columns=cols)) - pol.epsilon_, 0))
    assert list(pol.feature_names_in_) == cols
