from paperworks.testing import run_cli

CLAIMS = {"coverage", "volume_vs_mahalanobis", "gain_grows_with_d", "gain_grows_as_alpha_shrinks",
          "gp_posterior_variance", "mmd_minus_kpca", "rate_depends_on_effective_rank"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("mkscp", tmp_path / "run")
    assert doc["package"] == "mkscp" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    by_id = {c["id"]: c for c in doc["claims"]}
    # identities hold to numerical precision even at smoke size
    assert by_id["gp_posterior_variance"]["verdict"] == "supported"
    assert by_id["mmd_minus_kpca"]["verdict"] == "supported"
    split = doc["extra"]["split_vs_same_set"]
    assert split["reps"] == 30
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "regions_2d.png").exists()
    assert (tmp_path / "run" / "volume_ratio_vs_d.png").exists()
