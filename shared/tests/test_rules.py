"""The 0.2 verdict rules, on hand-made numbers, including each case the 0.1 rules got wrong."""

import numpy as np
import pytest

from paperworks import Claim, Estimate, censored_summary, compare, estimate, threshold_verdict
from paperworks.rules import describe, evaluate

CI = Estimate(1.0, 0.8, 1.2, 5)


@pytest.mark.parametrize("est,thr,better,verdict", [
    (CI, 0.5, "higher", "supported"),
    (CI, 1.5, "higher", "not supported"),
    (CI, 1.0, "higher", "inconclusive"),
    (CI, 1.5, "lower", "supported"),
    (CI, 0.5, "lower", "not supported"),
    (Estimate(float("nan")), 1.0, "higher", "inconclusive"),
])
def test_threshold_with_an_interval(est, thr, better, verdict):
    assert threshold_verdict(est, thr, better) == verdict


def test_no_interval_no_verdict_unless_exact():
    # 0.1: factlocus smoke gave 4 "supported" from single values on models at 0.34-0.88 recall
    assert threshold_verdict(Estimate(0.88), 0.5, "higher") == "inconclusive"
    assert threshold_verdict(Estimate(0.88), 0.5, "higher", exact=True) == "supported"
    assert threshold_verdict(Estimate(0.3), 0.5, "higher", exact=True) == "not supported"
    assert compare(2.0, 1.0, "higher") == "inconclusive"
    assert compare(2.0, 1.0, "higher", exact=True) == "supported"
    c = Claim.threshold("x", "s", "m", 0.88, threshold=0.5, better="higher")
    assert c.verdict == "inconclusive" and "no confidence interval" in c.reason
    assert Claim.threshold("x", "s", "m", 0.88, threshold=0.5, better="higher", exact=True).verdict == "supported"


def test_an_interval_on_one_side_only_is_not_a_point_comparison():
    # 0.1: compare(Estimate(0.51, 0.1, 0.9), Estimate(0.5), "higher") -> "supported"
    assert compare(Estimate(0.51, 0.1, 0.9, 3), Estimate(0.5), "higher") == "inconclusive"
    # exact baseline value: the method's interval must clear it
    assert compare(Estimate(0.51, 0.1, 0.9, 3), Estimate(0.5), "higher", exact=True) == "inconclusive"
    assert compare(Estimate(0.8, 0.6, 0.9, 3), Estimate(0.5), "higher", exact=True) == "supported"


def test_a_tie_is_not_a_win():
    assert compare(2.0, 2.0, "higher", exact=True) == "not supported"
    assert compare(2.0 + 1e-12, 2.0, "higher", exact=True) == "supported"
    touching = Estimate(2.0, 2.0, 2.0, 3)
    assert compare(touching, touching, "higher") == "not supported"
    assert compare(Estimate(3.0, 2.5, 3.5, 3), Estimate(2.0, 1.5, 2.5, 3), "higher") == "inconclusive"
    assert compare(Estimate(3.0, 2.6, 3.5, 3), Estimate(2.0, 1.5, 2.5, 3), "higher") == "supported"
    assert compare(Estimate(1.0, 0.9, 1.1, 3), Estimate(5.0, 4.0, 6.0, 3), "higher") == "not supported"


def test_paired_sees_a_real_difference_that_marginal_intervals_hide():
    # three seeds with a large shared seed effect and a steady +0.05 improvement
    base = np.array([0.60, 0.75, 0.90])
    meth = base + np.array([0.05, 0.06, 0.04])
    unpaired = Claim.compare("u", "s", "acc", list(meth), baseline="b", baselines={"b": list(base)}, better="higher",
                             bounds=(0, 1))
    paired = Claim.compare("p", "s", "acc", list(meth), baseline="b", baselines={"b": list(base)}, better="higher",
                           paired=True, bounds=(0, 1))
    assert unpaired.verdict == "inconclusive"
    assert paired.verdict == "supported"
    d = paired.differences["b"]
    assert d.method == "paired-t" and d.lower > 0 and d.value == pytest.approx(0.05)
    assert "paired" in paired.rule["words"]
    # the same data reversed: paired says "not supported"
    worse = Claim.compare("w", "s", "acc", list(base), baseline="b", baselines={"b": list(meth)}, better="higher",
                          paired=True)
    assert worse.verdict == "not supported"


def test_paired_needs_per_seed_values_of_equal_length():
    with pytest.raises(ValueError, match="same number of seeds"):
        Claim.compare("p", "s", "m", [1.0, 2.0], baseline="b", baselines={"b": [1.0, 2.0, 3.0]}, better="higher",
                      paired=True)
    with pytest.raises(ValueError, match="per-seed values"):
        Claim.compare("p", "s", "m", Estimate(1.0, 0.5, 1.5, 3), baseline="b", baselines={"b": [1.0, 2.0, 3.0]},
                      better="higher", paired=True)


def test_non_inferiority_with_a_negative_margin():
    base = [0.80, 0.85, 0.90, 0.82]
    meth = [0.79, 0.838, 0.892, 0.81]  # about 0.01 worse on every seed
    c = Claim.compare("ni", "no worse than b by more than 0.02", "acc", meth, baseline="b", baselines={"b": base},
                      better="higher", margin=-0.02, paired=True)
    assert c.verdict == "supported" and "no worse than" in c.rule["words"]
    strict = Claim.compare("sup", "s", "acc", meth, baseline="b", baselines={"b": base}, better="higher", paired=True)
    assert strict.verdict == "not supported"


def test_ratios_are_judged_on_the_log_scale():
    # 0.1: a speed-up shown as 0.67 [0.00036, 1254] from a t-interval of ratios
    e = estimate([0.5, 2.0, 0.6], scale="log")
    assert e.lower > 0 and e.method == "log-t"
    inv = estimate([2.0, 0.5, 1 / 0.6], scale="log")
    assert inv.value == pytest.approx(1 / e.value) and inv.lower == pytest.approx(1 / e.upper)
    t_meth, t_base = [1.0, 1.1, 0.9, 1.05], [3.0, 3.5, 2.6, 3.1]
    c = Claim.compare("fast", "s", "time (s)", t_meth, baseline="b", baselines={"b": t_base}, better="lower",
                      paired=True, scale="log", margin=float(np.log(2)))
    assert c.verdict == "supported"  # at least 2x faster, on every seed pair
    assert c.differences["b"].method == "paired-log-t"


def test_bounded_metrics_stay_in_range():
    # 0.1: the report showed AUROC 0.68 [-2.95, 4.31] and accuracy intervals above 1
    e = estimate([0.2, 0.99, 0.85], bounds=(0, 1))
    assert 0 <= e.lower <= e.value <= e.upper <= 1
    with pytest.raises(ValueError, match="bounds"):
        estimate([1.2, 1.3], bounds=(0, 1))


def test_censored_runs_are_never_imputed():
    # 0.1: graphmuon charged a miss as 2x the budget: "13.7 [2.3, 80] supported" with the baseline
    # missing in 2 of 3 seeds
    method = censored_summary([10.0, 12.0, 11.0])
    baseline = censored_summary([30.0, None, None])
    assert baseline.n_censored == 2 and np.isnan(baseline.value)
    c = Claim.compare("ttt", "s", "steps to target", method, baseline="b", baselines={"b": baseline}, better="lower")
    assert c.verdict == "inconclusive" and "2 of 3 runs of b missed" in c.reason
    # shots-to-target intervals never go below zero (0.1: t-intervals with negative lower bounds)
    e = censored_summary([5, 9, 30, 7, 11, 8, 6, 12, 10, None], budget=40)
    assert e.lower >= 5 and e.n_censored == 1


def test_compare_all_compares_against_every_named_baseline():
    # 0.1: molhit's "beats mask and marginal" compared with mask only, and marginal was higher
    meth = Estimate(0.60, 0.55, 0.65, 3)
    c = Claim.compare_all("beats_both", "beats mask and marginal", "validity", meth, better="higher",
                          baselines={"mask": Estimate(0.40, 0.35, 0.45, 3), "marginal": Estimate(0.80, 0.75, 0.85, 3)})
    assert c.verdict == "not supported" and "marginal" in c.reason
    assert "mask and marginal" in c.rule["words"]
    both = Claim.compare_all("b", "s", "v", meth, better="higher",
                             baselines={"mask": Estimate(0.40, 0.35, 0.45, 3), "marginal": Estimate(0.3, 0.2, 0.4, 3)})
    assert both.verdict == "supported"
    one_open = Claim.compare_all("c", "s", "v", meth, better="higher",
                                 baselines={"mask": Estimate(0.40, 0.35, 0.45, 3), "marginal": Estimate(0.6, 0.5, 0.7, 3)})
    assert one_open.verdict == "inconclusive"


def test_within_is_two_sided():
    # "the rate is 2/3": a one-sided threshold passes a rate of 0.95
    from paperworks import binomial_ci

    high = binomial_ci(190, 200)
    assert Claim.threshold("t", "s", "rate", high, threshold=0.6, better="higher").verdict == "supported"
    assert Claim.within("w", "the rate is 2/3", "rate", high, target=2 / 3, tol=0.05).verdict == "not supported"
    near = binomial_ci(1334, 2000)
    assert Claim.within("w", "s", "rate", near, target=2 / 3, tol=0.05).verdict == "supported"
    wide = binomial_ci(6, 9)
    assert Claim.within("w", "s", "rate", wide, target=2 / 3, tol=0.05).verdict == "inconclusive"


def test_requires_makes_an_unmet_precondition_inconclusive():
    # 0.1: tikhonovgnn smoke "beats GIN" with both below chance
    c = Claim.compare("beats_gin", "beats GIN", "acc", Estimate(0.30, 0.28, 0.32, 3), baseline="gin",
                      baselines={"gin": Estimate(0.20, 0.18, 0.22, 3)}, better="higher",
                      requires={"both models above chance (0.33)": False})
    assert c.verdict == "inconclusive" and "precondition not met: both models above chance" in c.reason
    ok = Claim.compare("beats_gin", "beats GIN", "acc", Estimate(0.80, 0.78, 0.82, 3), baseline="gin",
                       baselines={"gin": Estimate(0.60, 0.58, 0.62, 3)}, better="higher",
                       requires={"both models above chance (0.33)": np.bool_(True)})
    assert ok.verdict == "supported" and "requires" in ok.rule["words"]
    with pytest.raises(TypeError, match="bool"):
        Claim.threshold("x", "s", "m", 1.0, threshold=0, better="higher", requires={"trained": "yes"})


def test_checks_are_exact_and_kept_apart():
    c = Claim.check("marginals", "the plan's marginals match", "max abs error", 3e-12, threshold=1e-9, better="lower")
    assert c.kind == "check" and c.verdict == "supported"
    bad = Claim.check("marginals", "s", "max abs error", 1e-3, threshold=1e-9, better="lower")
    assert bad.verdict == "not supported"
    with pytest.raises(ValueError, match="threshold"):
        Claim.check("x", "s", "m", 1.0)


def test_stored_claims_recompute_and_describe():
    c = Claim.compare("p", "s", "m", [1.0, 1.2, 1.1], baseline="b", baselines={"b": [0.5, 0.6, 0.55]},
                      better="higher", paired=True)
    d = c.to_dict()
    assert evaluate(d) == (c.verdict, c.reason)
    assert describe(d["rule"]) == d["rule"]["words"]


@pytest.mark.parametrize("kw,err", [
    ({"better": "faster"}, ValueError), ({"margin": float("nan")}, ValueError), ({"margin": "0.1"}, TypeError),
    ({"scale": "exp"}, ValueError), ({"paired": 1}, TypeError),
])
def test_bad_rule_parameters_fail_at_construction(kw, err):
    args = {"baseline": "b", "baselines": {"b": Estimate(1.0, 0.9, 1.1, 3)}, "better": "higher", **kw}
    with pytest.raises(err):
        Claim.compare("x", "s", "m", Estimate(2.0, 1.9, 2.1, 3), **args)


def test_bad_values_fail_clearly():
    with pytest.raises(TypeError, match="Estimate"):
        Claim.threshold("x", "s", "m", "0.9", threshold=0.5, better="higher")
    with pytest.raises(ValueError, match="baseline"):
        Claim.compare("x", "s", "m", 1.0, baseline="lp", baselines={"other": 2.0}, better="lower")
    with pytest.raises(ValueError, match="claim id"):
        Claim.threshold("has space", "s", "m", 1.0, threshold=0.5, better="higher")
    with pytest.raises(ValueError, match="outside"):
        Estimate(2.0, 0.0, 1.0, 3)


def test_unpaired_log_scale_reads_the_margin_as_a_log_ratio():
    fast, slow = Estimate(1.0, 0.9, 1.1, 3), Estimate(3.0, 2.8, 3.2, 3)
    c = Claim.compare("x", "at least 2x faster", "s", fast, baseline="b", baselines={"b": slow}, better="lower",
                      scale="log", margin=float(np.log(2)))
    assert c.verdict == "supported"  # log(2.8) - log(1.1) = 0.93 > log 2
    c3 = Claim.compare("x", "at least 3x faster", "s", fast, baseline="b", baselines={"b": slow}, better="lower",
                       scale="log", margin=float(np.log(3)))
    assert c3.verdict == "inconclusive"  # worst case 2.8/1.1 = 2.5x, best case 3.2/0.9 = 3.6x
