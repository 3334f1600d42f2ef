import numpy as np
import pandas as pd
import pytest
from mathinterest import (
    distribution_gap,
    krippendorff_alpha,
    population_divergence,
    rating_agreement,
    rationale_alignment,
)
from mathinterest.metrics import js_divergence, spearman_brown, split_half_reliability, w1_ordinal
from scipy.spatial.distance import jensenshannon
from scipy.stats import spearmanr, wasserstein_distance


def test_w1_and_js_match_scipy(rng):
    k = np.arange(1, 8)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7) * 0.3)
        assert w1_ordinal(p, q) == pytest.approx(wasserstein_distance(k, k, p, q), abs=1e-12)
        assert js_divergence(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2, abs=1e-12)


def test_spearman_brown_recovers_planted_reliability(rng):
    n_items, n_raters, var_t, var_e = 400, 20, 1.0, 4.0
    truth = rng.normal(0, np.sqrt(var_t), n_items)
    H = truth[:, None] + rng.normal(0, np.sqrt(var_e), (n_items, n_raters))
    r1 = var_t / (var_t + var_e)
    planted = spearman_brown(r1, n_raters)  # reliability of the mean of 20 raters (0.833)
    est = split_half_reliability(H, n_splits=30, method="pearson")
    assert est == pytest.approx(planted, abs=0.03)


def test_alpha_on_krippendorffs_worked_example():
    d = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
         [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    df = pd.DataFrame([(f"u{j}", "x", f"r{i}", v) for i, row in enumerate(d) for j, v in enumerate(row) if v],
                      columns=["problem_id", "population", "rater_id", "rating"])
    assert krippendorff_alpha(df, level="ordinal") == pytest.approx(0.815, abs=5e-4)  # Krippendorff (2011)
    assert krippendorff_alpha(df, level="nominal") == pytest.approx(0.743, abs=5e-4)


def test_rho_matches_scipy_and_ci_covers(study, humans):
    j = study.judge("J3")
    a = rating_agreement(j, humans, population="imo", n_boot=200)
    h = humans[humans.population == "imo"].groupby("problem_id").rating.mean()
    e = j[j.population == "imo"].set_index("problem_id").loc[h.index, "expected"]
    assert a["rho"] == pytest.approx(spearmanr(e, h).statistic, abs=1e-12)
    assert a["ci"][0] <= a["rho"] <= a["ci"][1] and 0 < a["ceiling"] <= 1


def test_judges_separated_on_a_small_study(study, humans):
    """J1 high rho but fails the distribution test; J3 passes all; J4 fails rationales."""
    res = {}
    for k in ("J1", "J2", "J3", "J4", "length", "blind"):
        j = study.judge(k)
        res[k] = {"rho": rating_agreement(j, humans, population="imo", n_boot=50)["rho"],
                  "w1": distribution_gap(j, humans, population="imo", n_boot=50),
                  "rat": rationale_alignment(j, humans, population="imo"),
                  "div": population_divergence(j, humans)["corr"]}
    assert res["J1"]["rho"] > 0.8 and res["J1"]["rho"] > res["length"]["rho"] + 0.3
    assert res["J1"]["w1"]["excess"] > 0.2 and res["J1"]["w1"]["ci"][0] > 0
    assert res["J2"]["w1"]["excess"] > 0.2
    assert res["J3"]["w1"]["excess"] < 0 and res["J3"]["w1"]["ci"][1] < 0.05
    assert res["J3"]["rat"]["judge"] > res["J3"]["rat"]["baseline"]
    assert res["J4"]["rat"]["judge"] < 0.3 < res["J4"]["rat"]["baseline"]
    assert res["J3"]["div"] > 0.5 and abs(res["blind"]["div"]) < 1e-9


def test_bad_inputs(study, humans):
    j = study.judge("J1")
    with pytest.raises(ValueError, match="pass population="):
        rating_agreement(j, humans)
    with pytest.raises(ValueError, match="unknown population"):
        distribution_gap(j, humans, population="martians")
    with pytest.raises(ValueError, match="no rating for problem"):
        rating_agreement(j[j.problem_id != "s000"], humans, population="imo")
    few = humans[humans.rater_id.isin(["imo_000", "imo_001", "imo_002"])]
    with pytest.raises(ValueError, match="under 4 raters"):
        distribution_gap(j, few, population="imo")
    with pytest.raises(ValueError, match="metric"):
        distribution_gap(j, humans, population="imo", metric="kl")


def test_reference_judges(humans, study):
    from mathinterest.baselines import constant_judge, length_judge

    lj = length_judge(["a", "a much longer problem text", "mid text"])
    assert lj.expected.tolist() == [1.0, 7.0, 4.0]
    cj = constant_judge(humans)
    imo = humans[humans.population == "imo"].rating
    row = cj[cj.population == "imo"].iloc[0]
    assert row["expected"] == pytest.approx(imo.mean()) and cj.expected.nunique() == 2
    assert np.isnan(rating_agreement(cj, humans, population="imo", n_boot=20)["rho"])  # cannot rank
