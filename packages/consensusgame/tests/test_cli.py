from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"op_prevents_conventions", "attention_recovers_importance", "attention_beats_topology_heuristics",
          "conformity_lowers_accuracy_static", "conformity_lie_to_fit_in_static", "accuracy_loss_grows_with_n",
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


def test_edge_list_alone_without_matplotlib(tmp_path, monkeypatch):
    """In-process, matplotlib hidden, and the sweep over nothing but a user's edge list (named like the
    groups kind, to catch guessing the kind from the name): results.json is written, no figure, and the
    claims that need a re-drawn groups graph are inconclusive with the reason, not a crash."""
    from consensusgame.run import run

    edges = tmp_path / "groups_of_friends.txt"
    edges.write_text("# u v\n0 1\n1 2\n2 3\n3 0\n0 2\n4 5\n5 6\n6 4\n3 4\n7 8\n8 9\n9 7\n6 7\n")
    doc = smoke_without_matplotlib("consensusgame", run, monkeypatch, tmp_path / "run", overrides=(
        "experiment=smoke", f"sweep.graphs=[{{kind: edge_list, path: '{edges}'}}]"))
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == CLAIMS
    for cid in ("groups_smaller_accuracy_loss", "groups_conformity_raises_agreement"):
        assert claims[cid]["verdict"] == "inconclusive"
        assert "both a static graph and a re-drawn groups graph" in claims[cid]["reason"]
    assert "groups_of_friends" in claims["conformity_lowers_accuracy_static"]["metric"]
