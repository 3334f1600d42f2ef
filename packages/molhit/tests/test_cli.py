from paperworks.testing import run_cli


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("molhit", tmp_path / "run")
    assert doc["package"] == "molhit" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == {"near_perfect_validity", "validity_beats_mask",
                                                "quality_beats_baselines", "dae_fidelity", "dae_generation",
                                                "qed_guidance", "mw_guidance", "scaffold_extension"}
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "samples_hierarchical.png").stat().st_size > 0
    assert (tmp_path / "run" / "checkpoints" / "hierarchical+digress.pt").exists()

