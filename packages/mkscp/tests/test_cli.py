from paperworks.testing import run_cli

CLAIMS = {"volume_vs_mahalanobis", "gain_grows_with_d", "gain_grows_as_alpha_shrinks",
          "rate_depends_on_effective_rank", "volume_vs_mahalanobis_d2", "volume_vs_mahalanobis_d3"}
# coverage (any score calibrated on a separate split covers) and the two identities hold by construction
CHECKS = {"coverage_alpha_0.2", "coverage_alpha_0.1", "gp_posterior_variance", "mmd_minus_kpca",
          "volume_samplers_agree", "volume_spread_d6"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("mkscp", tmp_path / "run")
    assert doc["package"] == "mkscp" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert {c["id"] for c in doc["checks"]} == CHECKS
    by_id = {c["id"]: c for c in doc["checks"]}
    # identities hold to numerical precision even at smoke size
    assert by_id["gp_posterior_variance"]["verdict"] == "supported"
    assert by_id["mmd_minus_kpca"]["verdict"] == "supported"
    # coverage is never clearly off nominal (at smoke size the interval may be wider than ±0.01)
    assert all(by_id[f"coverage_alpha_{a}"]["verdict"] != "not supported" for a in ("0.2", "0.1"))
    # the volume estimator's own accuracy: samplers agree with uniform references, auto is stable at d = 6
    assert by_id["volume_samplers_agree"]["verdict"] == "supported"
    assert doc["extra"]["volume_spread"]["auto"]["stable"] == doc["extra"]["volume_spread"]["seeds"]
    split = doc["extra"]["split_vs_same_set"]
    assert split["reps"] == 30
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "regions_2d.png").exists()
    assert (tmp_path / "run" / "volume_ratio_vs_d.png").exists()
