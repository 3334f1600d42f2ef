from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"near_perfect_validity", "validity_beats_mask", "quality_beats_baselines", "dae_fidelity_moses", "dae_fidelity_charged", "dae_generation",
          "qed_guidance", "mw_guidance", "joint_guidance", "scaffold_extension", "scaffold_validity",
          "quality_novelty_pareto"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("molhit", tmp_path / "run")
    assert doc["package"] == "molhit" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    # the pooled unguided MW-bin share is 1/bins by construction (present when any unguided sample is valid)
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "samples_hierarchical.png").stat().st_size > 0
    assert (tmp_path / "run" / "checkpoints" / "hierarchical+digress.pt").exists()
    # the run's checkpoint is a self-contained model: `molhit sample` draws from it without training data
    ck = tmp_path / "run" / "checkpoints" / "hierarchical.pt"
    out = run_cli("molhit", tmp_path / "sample", "sample", f"model={ck}", "n=6", "temperature=0.9")
    assert out["experiment"] == "sample" and out["extra"]["n"] == 6 and out["extra"]["process"] == "hierarchical"
    assert [c["verdict"] for c in out["checks"]] == ["supported"]
    assert (tmp_path / "sample" / "samples.smi").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    """The glue writes results.json before plotting: without matplotlib the run still succeeds."""
    from molhit.run import run

    doc = smoke_without_matplotlib("molhit", run, monkeypatch, tmp_path)
    assert {c["id"] for c in doc["claims"]} == CLAIMS
