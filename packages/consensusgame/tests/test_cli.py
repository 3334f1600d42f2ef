from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"op_prevents_conventions", "attention_recovers_importance", "attention_beats_topology_heuristics",
          "conformity_lowers_accuracy_static", "conformity_raises_dishonesty_static", "accuracy_loss_grows_with_n",
          "groups_smaller_accuracy_loss", "groups_conformity_raises_agreement", "trained_beats_random"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("consensusgame", tmp_path / "run")
    assert doc["package"] == "consensusgame"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    # smoke has no honest baseline: only the random-rate check; it must pass (the game draws uniformly)
    assert {c["id"]: c["verdict"] for c in doc["checks"]} == {"random_round1_accuracy_is_1_over_k": "supported"}
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "conformity_sweep.png").exists()
    assert list((tmp_path / "run" / "checkpoints").glob("*.msgpack"))


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    """The glue writes results.json before plotting: without matplotlib the run still succeeds."""
    from consensusgame.run import run

    doc = smoke_without_matplotlib("consensusgame", run, monkeypatch, tmp_path)
    assert {c["id"] for c in doc["claims"]} == CLAIMS
