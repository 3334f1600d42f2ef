from consensusgame import graphs

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

    # the smoke's own BA(10, 3) graph written as an edge list: the programs the CLI smoke just compiled
    # are found in the persistent XLA cache (same shapes and constants), so this run costs seconds
    ba = graphs.barabasi_albert(10, 3, seed=0)
    edges = tmp_path / "groups_of_friends.txt"
    edges.write_text("# u v\n" + "".join(f"{u} {v}\n" for u, v in zip(ba.senders, ba.receivers) if u < v))
    engagement = tmp_path / "engagement.csv"                       # a real graph's per-node engagement
    engagement.write_text("node,reposts\n" + "".join(f"{i},{v}\n" for i, v in enumerate([5, 1, 9, 3, 7, 2, 8, 4, 6, 0])))
    doc = smoke_without_matplotlib("consensusgame", run, monkeypatch, tmp_path / "run", overrides=(
        "experiment=smoke", f"sweep.graphs=[{{kind: edge_list, path: '{edges}'}}]",
        f"attention.graphs=[{{kind: edge_list, path: '{edges}', engagement: '{engagement}'}}]"))
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == CLAIMS
    for cid in ("groups_smaller_accuracy_loss", "groups_conformity_raises_agreement"):
        assert claims[cid]["verdict"] == "inconclusive"
        assert "both a static graph and a re-drawn groups graph" in claims[cid]["reason"]
    assert "groups_of_friends" in claims["conformity_lowers_accuracy_static"]["metric"]
    for cid in ("attention_recovers_importance", "attention_beats_topology_heuristics"):
        assert "groups_of_friends" in claims[cid]["metric"] and "planted: engagement" in claims[cid]["metric"]
