from tmevolve.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("tmevolve", tmp_path / "run")
    assert doc["package"] == "tmevolve"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == {"mean_beats_median", "efficiency_ratio"}
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("tmevolve", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
