import numpy as np
import pytest
from robustpredict import FixedShading, PostedPricing, RICh, SkiRental
from robustpredict.baselines import best_posted_price
from robustpredict.robust import RobustPolicy, shade_grid
from sklearn.exceptions import NotFittedError


def test_best_posted_price_brute_force(rng):
    for _ in range(20):
        v = rng.exponential(3.0, rng.integers(1, 40))
        grid = np.concatenate([v, np.linspace(0, v.max(), 2001)])
        rev = (grid[:, None] * (v[None, :] >= grid[:, None])).sum(1)
        assert best_posted_price(v) * np.sum(v >= best_posted_price(v)) == pytest.approx(rev.max())


def test_ric_h_one_cluster_is_the_global_best_price(rng):
    X = rng.normal(size=(400, 2))
    v = np.exp(X[:, 0])
    ric = RICh(lambda X: X[:, 0], ks=[1]).fit(X, v)
    np.testing.assert_allclose(ric.act(X), best_posted_price(v))


def test_ric_h_clusters_by_prediction(rng):
    X = rng.normal(size=(4000, 2))
    v = 5 + X[:, 0]
    ric = RICh(lambda X: 5 + X[:, 0], ks=[1, 8, 64]).fit(X, v)
    assert ric.k_ > 1  # an exact predictor makes finer clusters pay
    p = ric.act(X)
    order = np.argsort(5 + X[:, 0])
    assert np.all(np.diff(p[order]) >= -1e-12)  # prices are monotone in the prediction here
    with pytest.raises(NotFittedError, match="fit"):
        RICh(lambda X: X[:, 0]).act(X)
    with pytest.raises(ValueError, match="ks"):
        RICh(lambda X: X[:, 0], ks=[0])


def test_fixed_shading_picks_the_best_grid_shade(rng):
    X = rng.normal(size=(3000, 2))
    y = 5 + X[:, 0] + 0.2 * rng.choice([-1.0, 1.0], 3000)
    prob = SkiRental(5.0)
    shades = np.linspace(0, 1, 51)
    fs = FixedShading(prob, lambda X: 5 + X[:, 0], shades=shades).fit(X, y)
    losses = [np.mean(prob.regret(prob.robust_action(5 + X[:, 0], s), y)) for s in shades]
    assert fs.shade_ == shades[int(np.argmin(losses))]
    assert fs.shade_ == pytest.approx(0.2, abs=0.021)  # ±0.2 errors: book exactly 0.2 extra
    with pytest.raises(ValueError, match="shades"):
        FixedShading(PostedPricing(), lambda X: X[:, 0], shades=[-1.0])


def test_fixed_shading_default_grid_is_the_cv_grid(rng):
    X = rng.normal(size=(2000, 2))
    y = 5 + X[:, 0] + rng.standard_t(3, 2000) * 0.1
    fs = FixedShading(PostedPricing(), lambda X: 5 + X[:, 0]).fit(X, y)
    grid = shade_grid(y)
    assert grid[0] == 0 and grid.size == 41 and grid[-1] == pytest.approx(np.std(y))
    assert fs.shade_ in grid
    # with nothing fitted inside a fold and equal folds, K-fold CV picks the pooled argmin: the same shade
    cv = RobustPolicy(PostedPricing(), lambda X: 5 + X[:, 0], epsilon="cv", cv=5, random_state=0).fit(X, y)
    assert cv.epsilon_ == fs.shade_
    with pytest.raises(NotFittedError):
        FixedShading(PostedPricing(), lambda X: X[:, 0]).act(X)
