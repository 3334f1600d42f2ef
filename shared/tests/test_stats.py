import numpy as np
import pytest
from scipy import stats

from paperworks import Estimate, binomial_ci, bootstrap_ci, estimate, t_ci
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


def test_bootstrap_method_is_bca_as_documented():
    x = np.random.default_rng(2).lognormal(size=40)
    bca = bootstrap_ci(x, seed=0)
    pct = bootstrap_ci(x, seed=0, method="percentile")
    ref = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=9999, random_state=np.random.default_rng(0))
    assert bca.method == "bootstrap" and pct.method == "bootstrap-percentile"
    assert (bca.lower, bca.upper) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    assert (pct.lower, pct.upper) != pytest.approx((bca.lower, bca.upper))


def test_bounds_clip_the_interval():
    e = bootstrap_ci([0.97, 0.99, 1.0, 1.0, 0.95], bounds=(0, 1))
    assert e.upper <= 1 and e.bounds == (0.0, 1.0)


def test_paired_difference_and_log_ratio():
    from paperworks import paired_difference

    a, b = [2.0, 4.0, 8.0], [1.0, 2.0, 4.0]
    r = paired_difference(a, b, scale="log")
    assert r.value == pytest.approx(2.0) and r.lower == pytest.approx(2.0) and r.upper == pytest.approx(2.0)
    d = paired_difference(a, b)
    ref = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert (d.lower, d.upper) == pytest.approx((ref.low, ref.high))


def test_wilson_matches_the_formula():
    k, n, z = 45, 50, stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    e = binomial_ci(k, n, method="wilson")
    assert (e.lower, e.upper) == pytest.approx((centre - half, centre + half))


def test_censored_median_interval_covers():
    from paperworks import censored_summary

    rng = np.random.default_rng(3)
    hits, n_runs = 0, 600
    for _ in range(n_runs):
        x = rng.exponential(size=12)  # true median log 2
        e = censored_summary([v if v < 2.5 else None for v in x], budget=2.5)
        hits += e.lower <= np.log(2) <= e.upper
    assert hits / n_runs >= 0.93  # the order-statistic interval is conservative (>= 95 %)
    all_missed = censored_summary([None, None, None, None, None, None, None, None])
    assert all_missed.n_censored == 8 and np.isnan(all_missed.value)
    with pytest.raises(ValueError, match="finite"):
        censored_summary([1.0, -2.0])
    with pytest.raises(TypeError):
        censored_summary(["3"])


def test_estimates_round_trip_with_infinite_ends():
    from paperworks import censored_summary

    e = censored_summary([1, 2, 3, 4, 5, 6, None, None, None])
    d = e.to_dict()
    assert d["upper"] == "inf"
    assert Estimate.from_dict(d) == e


def test_binomial_ci_matches_scipy():
    e = binomial_ci(45, 50)
    ci = stats.binomtest(45, 50).proportion_ci(method="exact")
    assert (e.lower, e.upper) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("call", [
    lambda: t_ci([]), lambda: t_ci([1.0, np.nan]), lambda: t_ci([1.0, 2.0], level=1.2),
    lambda: binomial_ci(5, 3), lambda: estimate([1.0], method="nope"), lambda: estimate([1.0], scale="exp"),
    lambda: bootstrap_ci([1.0, 2.0], method="bca"), lambda: estimate([0.5, 0.7], bounds=(1, 0)),
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


def test_censored_median_among_misses_is_nan_as_documented():
    from paperworks.stats import censored_summary

    most_missed = censored_summary([None, None, 5.0])
    assert np.isnan(most_missed.value) and most_missed.n_censored == 2
    assert np.isnan(censored_summary([None, None, None]).value)
    assert censored_summary([1.0, 2.0, None]).value == 2.0
