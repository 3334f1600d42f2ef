from entropyshap.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"mc_mixture_matches_closed_form", "knn_matches_closed_form",
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


def test_explain_verb_on_saved_model_and_user_rows(tmp_path, monkeypatch, capsys):
    import json

    import numpy as np
    from entropyshap import GaussianMLP, cli
    from entropyshap.data import learned_case
    from entropyshap.explain_cli import run_explain

    from paperworks.hydra_glue import compose, execute

    X, Y = learned_case(300, np.random.default_rng(0))
    GaussianMLP(4, 2, hidden=8).fit(X, Y, epochs=1).save(tmp_path / "m.pt")
    lines = ["a,b,c,d"] + [",".join(f"{v:.4f}" for v in r) for r in X[:40]]
    lines[5] = "1,2,oops,4"   # unparsable
    lines[9] = "1,2,3"        # wrong width
    (tmp_path / "bg.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    cfg = compose("entropyshap", [f"model.path={tmp_path / 'm.pt'}", f"data.path={tmp_path / 'bg.csv'}",
                                  "data.n_points=2", "n_components=16", "n_mc=64"], config_name="explain")
    execute("entropyshap", run_explain, cfg, out)
    doc = json.loads((out / "results.json").read_text())
    assert doc["extra"]["skipped_rows"] == [6, 10] and doc["extra"]["n_background"] == 38
    assert doc["checks"][0]["verdict"] == "supported"
    assert len((out / "attributions.csv").read_text().strip().splitlines()) == 1 + 2 * 4
    # the console script dispatches the verb
    monkeypatch.setattr("sys.argv", ["entropyshap", "explain", "--help"])
    cli.main()
    assert "model.path=" in capsys.readouterr().out


def test_explain_needs_paths():
    import pytest
    from entropyshap.explain_cli import run_explain

    from paperworks.hydra_glue import compose

    with pytest.raises(ValueError, match="model.path"):
        run_explain(compose("entropyshap", [], config_name="explain"))
