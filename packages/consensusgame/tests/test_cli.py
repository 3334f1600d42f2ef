from paperworks.testing import run_cli

CLAIMS = {"op_prevents_conventions", "attention_recovers_importance", "conformity_lowers_accuracy_static",
          "conformity_raises_dishonesty_static", "accuracy_loss_grows_with_n", "groups_smaller_accuracy_loss",
          "groups_conformity_raises_agreement", "trained_beats_random"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("consensusgame", tmp_path / "run")
    assert doc["package"] == "consensusgame"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "conformity_sweep.png").exists()
    assert list((tmp_path / "run" / "checkpoints").glob("*.msgpack"))
