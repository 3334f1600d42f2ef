from matt.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("matt", tmp_path / "run")
    assert doc["package"] == "matt" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"recovery_large", "aim_beats_heuristics", "aim_fewer_steps_to_half"} <= ids
    assert {c["id"] for c in doc["checks"]} >= {"aim_zero_for_identity", "segments_partition_minimal"}
    assert all(c["verdict"] == "supported" for c in doc["checks"] if c["id"] != "aim_loss_decreases")
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("matt", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
