import numpy as np
import pandas as pd
import pytest
from metaknow import StubPolicy, paired_shift
from metaknow.stats import mcnemar_exact
from scipy import stats as st
from statsmodels.stats.contingency_tables import mcnemar


def frames(t, r, v=None, ids=None):
    n = len(t)
    ids = list(range(n)) if ids is None else ids
    v = np.zeros(n, bool) if v is None else v
    return (pd.DataFrame({"prompt_id": ids, "refused": t, "verbalized": v}),
            pd.DataFrame({"prompt_id": list(range(n)), "refused": r, "verbalized": np.zeros(n, bool)}))


@pytest.mark.parametrize("b,c", [(0, 0), (3, 0), (7, 2), (12, 15), (40, 22)])
def test_mcnemar_matches_statsmodels(b, c):
    t = [1] * b + [0] * c + [1] * 5 + [0] * 4
    r = [0] * b + [1] * c + [1] * 5 + [0] * 4
    s = paired_shift(*frames(t, r), method="mcnemar")
    assert s.discordant == (b, c)
    assert s.p_value == pytest.approx(mcnemar(np.array([[5, b], [c, 4]]), exact=True).pvalue, abs=1e-12)
    assert s.delta == pytest.approx((b - c) / len(t))
    assert s.lower <= s.delta <= s.upper


def test_bootstrap_is_mean_difference_and_filter_drops_treated_verbalised(rng):
    t, r = rng.random(60) < 0.5, rng.random(60) < 0.3
    v = rng.random(60) < 0.3
    s = paired_shift(*frames(t, r, v))
    assert s.delta == pytest.approx(np.mean(t.astype(float) - r))
    f = paired_shift(*frames(t, r, v), exclude_verbalized=True)
    assert f.n_pairs == int((~v).sum())
    assert f.delta == pytest.approx(np.mean(t[~v].astype(float) - r[~v]))


def test_ids_that_differ_are_an_error():
    t, r = frames([1, 0, 1], [0, 0, 1], ids=[0, 1, 5])
    with pytest.raises(ValueError, match="prompt ids differ"):
        paired_shift(t, r)


def test_planted_stub_recovers_delta_with_binomial_coverage_and_the_filter_removes_a_verbalised_shift():
    studies = 40
    pol = StubPolicy(0.1, 0.2, 0.3, seed=0)
    cover, est = 0, []
    for s in range(studies):
        sh = paired_shift(*pol.study(60, seeds=2), n_resamples=400, seed=s)
        cover += sh.lower <= pol.true_shift() <= sh.upper
        est.append(sh.delta)
    # coverage inside the central 99.8% binomial band of 40 studies at 0.95
    lo, hi = st.binom.ppf(0.001, studies, 0.95), st.binom.ppf(0.999, studies, 0.95)
    assert lo <= cover <= hi
    assert abs(np.mean(est) - 0.2) < 4 * np.std(est) / np.sqrt(studies)
    only = StubPolicy(0.1, 0.2, 0.5, shift_only_when_verbalized=True, seed=1)
    raw, filt = [], []
    for _ in range(20):
        t, r = only.study(60, seeds=2)
        raw.append(paired_shift(t, r, n_resamples=200).delta)
        filt.append(paired_shift(t, r, exclude_verbalized=True, n_resamples=200).delta)
    assert np.mean(raw) > 0.1
    assert abs(np.mean(filt)) < 4 * np.std(filt) / np.sqrt(20) + 1e-3


def test_stub_rejects_impossible_probabilities():
    with pytest.raises(ValueError, match="exceed 1"):
        StubPolicy(0.5, 0.4, 0.1)
    with pytest.raises(ValueError, match="p_verbalize > 0"):
        StubPolicy(0.1, 0.1, 0.0, shift_only_when_verbalized=True)
    with pytest.raises(ValueError, match="p_refuse"):
        StubPolicy(1.2, 0.0, 0.1)
    assert mcnemar_exact(0, 0) == 1.0


def test_harm_of_non_refused_answers_pairs_without_nans_and_mcnemar_needs_binary():
    t = pd.DataFrame({"prompt_id": [0, 1, 2, 3], "harm": [0.2, np.nan, 0.8, 0.4], "verbalized": [False] * 4})
    r = pd.DataFrame({"prompt_id": [0, 1, 2, 3], "harm": [0.6, 0.5, np.nan, 0.4], "verbalized": [False] * 4})
    s = paired_shift(t, r, metric="harm", n_resamples=200)
    assert s.n_pairs == 2 and s.delta == pytest.approx((-0.4 + 0.0) / 2)
    with pytest.raises(ValueError, match="0/1 metric"):
        paired_shift(t, r, metric="harm", method="mcnemar")
