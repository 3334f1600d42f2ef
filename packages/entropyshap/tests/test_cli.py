from entropyshap.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"mc_mixture_matches_closed_form", "mixture_not_averaged", "knn_matches_closed_form",
          "chain_rule_sample_based", "dependence_feature_cross_term", "cross_term_matches_oracle", "full_vs_diagonal",
          "marginal_game_localises", "sampler_last_lag_analytic"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("entropyshap", tmp_path / "run")
    assert doc["package"] == "entropyshap"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    assert checks["chain_rule_closed_form"] == "supported" and checks["efficiency"] == "supported"
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "full_mlp.pt").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    import shapiq  # noqa: F401  (shapiq itself requires matplotlib: import it before matplotlib is hidden)

    doc = smoke_without_matplotlib("entropyshap", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
