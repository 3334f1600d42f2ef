import numpy as np
import pytest
from robustpredict import HouseFlipping, PostedPricing, SkiRental
from robustpredict.data import MeanFunction
from robustpredict.run import ftp_limit, run

from paperworks import Claim
from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib

# smaller test sets than smoke's: these in-process runs check the plumbing, the CLI test runs smoke itself
FAST = ["controlled.n_test=2000", "learned.n_test=2000"]


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("robustpredict", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "seeds=2", *FAST))
    assert "robust_rate_pricing_gaussian" in {c["id"] for c in doc["claims"]}


def test_claims_are_paired_two_sided_and_certified_from_heldout():
    out = run(compose("robustpredict", ["experiment=smoke", *FAST]))
    by = {c.id: c for c in out["claims"]}
    c = by["eps_auto_beats_baselines_pricing"]
    assert c.rule["kind"] == "compare_all" and c.rule["paired"]
    assert set(c.rule["baselines"]) == {"fixed_shading", "ric_h"}
    d = c.differences["ric_h"]
    assert d.n == 3 and d.has_ci
    assert d.value == pytest.approx(c.method.value - c.baselines["ric_h"].value)
    # the smoke run has one training size: the learned η cannot span a decade, so no verdict
    assert c.verdict == "inconclusive" and "decade" in c.reason
    rate = by["robust_rate_pricing_gaussian"]
    assert rate.rule["kind"] == "within" and rate.rule["target"] == pytest.approx(2 / 3)
    assert "leave the ε-ball" in rate.rule["requires"][0]["what"]
    # the certificate uses held-out η and J, the check the test RMSE
    rows = [r for r in out["metrics"] if "bound_heldout" in r]
    assert rows and all(r["bound_heldout"] != r["bound"] for r in rows)
    assert {k.id for k in out["checks"]} == {"ftp_constant_loss_pricing", "ftp_limit_pricing",
                                             "loss_under_bound_test_eta"}
    assert all(isinstance(k, Claim) and k.kind == "check" for k in out["checks"])
    # the learned predictors' error falls with n (noisy labels, nearly noiseless states)
    out2 = run(compose("robustpredict", ["experiment=smoke", "seeds=1", "learned.ns=[100,10000]", "controlled.n_etas=3",
                                         *FAST]))
    eta = {r["n"]: r["eta_test"] for r in out2["metrics"] if r["setting"] == "learned" and r["policy"] == "ftp"}
    assert eta[100] > 5 * eta[10000]


@pytest.mark.parametrize("problem", [PostedPricing(), SkiRental(5.0), HouseFlipping(5.0, 0.5)],
                         ids=["pricing", "ski", "house"])
def test_ftp_limit_matches_simulation(problem):
    """The closed-form η -> 0 value of FTP on ±η errors (h/4 for house flipping) against Monte Carlo."""
    rng = np.random.default_rng(5)
    f = MeanFunction("linear", d=3, mean=5.0, spread=1.0, seed=0)(rng.normal(size=(400000, 3)))
    y = f + 1e-6 * rng.choice([-1.0, 1.0], f.size)
    mc = np.mean(problem.regret(problem.ftp_action(f), y))
    np.testing.assert_allclose(mc, ftp_limit(problem, 5.0, 1.0), rtol=0.01)
    if isinstance(problem, HouseFlipping):
        assert ftp_limit(problem, 5.0, 1.0) == pytest.approx(0.5 / 4)


def test_bench_tiny():
    cfg = compose("robustpredict", ["experiment=bench", "threads=1", "problems=[pricing]",
                                    "bench.n_contexts=20000", "bench.n_generic=200", "bench.repeats=3",
                                    "bench.warmup=0"])
    out = run(cfg)
    (c,) = out["claims"]
    assert c.id == "closed_form_1e6_under_1s"
    assert c.method.has_ci  # an interval over the repeats, not a bare time
    assert "CPU time" in c.metric and "predict (linear, 10^6 contexts)" in c.baselines
    (k,) = out["checks"]
    assert k.id == "closed_form_matches_generic_pricing" and k.verdict == "supported"
    mem = [r for r in out["metrics"] if "closed_form_peak_mib" in r]
    assert mem and mem[0]["closed_form_peak_mib"] >= 0 and mem[0]["memory_method"]
    assert all("cpu_median_s" in r for r in out["metrics"] if "decisions_per_s" in r)
