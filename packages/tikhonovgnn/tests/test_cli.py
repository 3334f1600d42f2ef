from paperworks.testing import run_cli

CLAIMS = {"exact_minimiser", "distinct_explanations_distinct_operators", "accuracy_matches_gin", "q_masking_faithful",
          "q_motif_auroc", "explanation_deterministic", "p_lowpass_at_high_homophily", "p_highpass_at_low_homophily",
          "global_receptive_field"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("tikhonovgnn", tmp_path / "run")
    assert doc["package"] == "tikhonovgnn"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "p_response_csbm.png").exists()
