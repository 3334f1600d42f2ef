from mkscp.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib

# a smaller design than smoke's: the in-process run checks the plumbing, the CLI test runs smoke itself
SMALL = ["dims=[2]", "residuals=[banana]", "alphas=[0.1]", "n_train=200", "n_fit=100",
         "n_cal=100", "n_test=100", "n_mc=1000", "split_check.reps=3", "convergence.n_fits=[40,80]",
         "convergence.n_ref=120", "convergence.n_eval=60", "convergence.seeds=1", "identities.n_fit=60",
         "volume_spread.seeds=0", "volume_check.dims=[2]"]


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("mkscp", run, monkeypatch, tmp_path, overrides=("experiment=smoke", *SMALL))
    assert {c["id"] for c in doc["checks"]} >= {"gp_posterior_variance", "mmd_minus_kpca", "coverage_alpha_0.1"}


def test_bench_tiny():
    cfg = compose("mkscp", ["experiment=bench", "bench.repeats=3", "bench.warmup=0", "bench.n_score=500",
                            "bench.n_fits=[60,120]", "bench.n_fit_claim=60", "bench.nystrom_components=30",
                            "bench.volume_points=2000", "bench.volume_d=4", "bench.volume_rtol=0.1"])
    out = run(cfg)
    by_id = {c.id: c for c in out["claims"]}
    assert set(by_id) == {"scoring_100k_points", "nystrom_scales"}
    t = by_id["scoring_100k_points"]
    assert t.method.has_ci and "CPU time" in t.metric and set(t.baselines) == {"mahalanobis", "kde", "mmd"}
    ny = by_id["nystrom_scales"]
    assert ny.rule["paired"] and ny.rule["scale"] == "log" and ny.differences["exact"].n == 3
    assert {r["what"] for r in out["metrics"]} == {"fit", "score", "volume"}
    assert all("cpu_median_s" in r for r in out["metrics"])
