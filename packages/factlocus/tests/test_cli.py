from paperworks.testing import run_cli


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("factlocus", tmp_path / "run")
    assert doc["package"] == "factlocus"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == {"mean_beats_median", "efficiency_ratio"}
    assert (tmp_path / "run" / "metrics.csv").exists()
