from paperworks.testing import run_cli


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("monarchrt", tmp_path / "run")
    assert doc["package"] == "monarchrt"
    assert doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"beyond_topk_10pct", "beats_sparse_baselines_5pct", "alignment_matters_5pct"} <= ids
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    assert set(checks) == {"random_control_no_gain", "triton_matches_reference"}
    assert checks["triton_matches_reference"] == "supported"
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "fidelity_structured.png").exists()  # plots are drawn after results.json
