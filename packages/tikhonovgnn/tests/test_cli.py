from paperworks.testing import run_cli

CLAIMS = {"accuracy_matches_gin", "q_masking_faithful", "q_motif_auroc", "q_agrees_across_seeds",
          "p_lowpass_at_high_homophily",
          "p_highpass_at_low_homophily", "global_receptive_field"}
CHECKS = {"exact_minimiser", "cg_matches_dense", "distinct_explanations_distinct_operators", "nullspace_one_dimensional",
          "gauge_freedom", "R_dense_on_connected_graphs", "explanation_deterministic"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("tikhonovgnn", tmp_path / "run")
    assert doc["package"] == "tikhonovgnn"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert {c["id"]: c["verdict"] for c in doc["checks"]} == {k: "supported" for k in CHECKS}
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "p_response_csbm.png").exists()  # plots are drawn after results.json
    assert (tmp_path / "run" / "q_motif_graph.png").exists()
