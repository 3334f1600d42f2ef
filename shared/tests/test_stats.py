import numpy as np
import pytest
from scipy import stats

from paperworks import binomial_ci, bootstrap_ci, estimate, t_ci
from paperworks.metrics import loglog_slope, rmse


def test_t_ci_matches_scipy():
    x = np.array([1.0, 2.5, 2.0, 3.1, 0.7])
    e = t_ci(x, 0.9)
    lo, hi = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert e.value == pytest.approx(x.mean())
    assert (e.lower, e.upper) == pytest.approx((lo, hi))
    assert e.n == 5 and e.method == "t"


def test_single_value_has_no_interval():
    e = t_ci([3.0])
    assert e.lower is None and e.upper is None and e.value == 3.0


def test_t_ci_coverage_is_nominal():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(2000):
        e = t_ci(rng.normal(size=8), 0.9)
        hits += e.lower <= 0.0 <= e.upper
    # 2000 trials: the binomial 99.9% band around 0.9 is about ±0.022
    assert abs(hits / 2000 - 0.9) < 0.025


def test_bootstrap_ci_brackets_the_mean():
    rng = np.random.default_rng(1)
    x = rng.exponential(size=200)
    e = bootstrap_ci(x, seed=0)
    assert e.lower < x.mean() < e.upper
    assert e.upper - e.lower < 0.5
    assert estimate(x, method="bootstrap", seed=0) == e


def test_binomial_ci_matches_scipy():
    e = binomial_ci(45, 50)
    ci = stats.binomtest(45, 50).proportion_ci(method="exact")
    assert (e.lower, e.upper) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("call", [
    lambda: t_ci([]), lambda: t_ci([1.0, np.nan]), lambda: t_ci([1.0, 2.0], level=1.2),
    lambda: binomial_ci(5, 3), lambda: estimate([1.0], method="nope"),
])
def test_bad_input(call):
    with pytest.raises(ValueError):
        call()


def test_metric_wrappers():
    assert rmse([0, 0], [3, 4]) == pytest.approx(np.sqrt(12.5))
    with pytest.raises(ValueError, match="differ in length"):
        rmse([1, 2], [1])
    x = np.array([1.0, 10.0, 100.0])
    slope, se = loglog_slope(x, 3 * x**-0.5)
    assert slope == pytest.approx(-0.5) and se == pytest.approx(0.0, abs=1e-12)
