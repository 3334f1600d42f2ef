from driftbench.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("driftbench", tmp_path / "run")
    assert doc["package"] == "driftbench" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"kbv_recovered_sim-a", "complexity_slope_recovered", "judge_miss_rate_recovered_m0.3",
            "real_claim1_complexity"} <= ids
    assert all(c["verdict"] == "inconclusive" for c in doc["claims"] if c["id"].startswith("real_"))
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    assert checks["probe_never_in_context"] == "supported" and checks["checker_equals_planted_truth"] == "supported"
    assert (tmp_path / "run" / "metrics.csv").exists() and (tmp_path / "run" / "by_turn.png").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("driftbench", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "judges.enabled=false", "n_briefs=2", "bootstrap=100"))
    assert doc["experiment"] == "smoke"
