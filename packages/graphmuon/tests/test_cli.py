from paperworks.testing import run_cli


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("graphmuon", tmp_path / "run")
    assert doc["package"] == "graphmuon"
    assert doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"step_cost_h16", "speedup_vs_muon_deep_K16", "speedup_vs_adamw_deep_K16",
            "muon_window_narrows_with_K", "graphmuon_window_wider_deep_K16", "competitive_accuracy"} <= ids
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    assert set(checks) == {"muon_amplification", "graphmuon_mitigates", "recovers_muon"}
    assert checks["recovers_muon"] == "supported"  # Σ = I gives Muon bit for bit
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "speedups.png").exists()  # plots are drawn after results.json
    assert (tmp_path / "run" / "lr_windows.png").exists()
    assert set(doc["extra"]["regimes"]) == {"deep_K1", "deep_K16"}
