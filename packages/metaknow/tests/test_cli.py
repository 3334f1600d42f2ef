from paperworks.testing import run_cli


def test_smoke_cli_writes_results_with_claims_and_checks(tmp_path):
    doc = run_cli("metaknow", tmp_path / "run")
    assert doc["package"] == "metaknow" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"planted_ci_coverage", "claim1_safer_than_base_and_control",
            "claim4_confounder_beyond_memorisation_and_verbalisation"} <= ids
    for c in doc["claims"]:
        if c["id"].startswith("claim"):
            assert c["verdict"] == "inconclusive" and "pretrained LLM" in c["reason"]
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    assert checks["control_token_parity"] == "supported"
    assert checks["packed_equals_unpacked_loss"] == "supported"
    assert checks["base_weights_unchanged"] == "supported"
    assert (tmp_path / "run" / "metrics.csv").exists()
