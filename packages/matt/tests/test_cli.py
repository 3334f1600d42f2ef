import pytest
from matt.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    # the installed script on a trimmed smoke (the full smoke runs in-process below)
    doc = run_cli("matt", tmp_path / "run", "experiment=smoke", "lr_grid=[0.003]", "depths=[1]", "check_lines=5")
    assert doc["package"] == "matt" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"recovery_large", "aim_beats_heuristics", "aim_fewer_steps_to_half"} <= ids
    assert {c["id"] for c in doc["checks"]} >= {"aim_zero_for_identity", "segments_partition_minimal"}
    assert all(c["verdict"] == "supported" for c in doc["checks"] if c["id"] != "aim_loss_decreases")
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("matt", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "lr_grid=[0.003]", "depths=[1,2]"))
    assert doc["experiment"] == "smoke"


def test_transfer_and_evaluate_verbs_on_users_files(world, tmp_path):
    """`matt transfer` / `matt evaluate` on a saved model, a saved tokenizer and a text file with bad rows."""
    from matt.verbs import run_evaluate, run_transfer

    from paperworks.hydra_glue import ConfigError, compose
    from paperworks.lm import save_local

    save_local(tmp_path / "teacher", world["teacher"], world["ta"])
    world["tb"].save_pretrained(tmp_path / "tok_b")
    text = tmp_path / "b.txt"
    text.write_bytes(("\n".join(world["transfer"][:40]) + "\n\n\xff\n").encode("latin-1"))
    cfg = compose("matt", [f"model={tmp_path / 'teacher'}", f"tokenizer={tmp_path / 'tok_b'}", f"data.path={text}",
                           "init=fvt", "aim_steps=2", "lm_steps=2", "batch_size=8"], config_name="transfer")
    out = run_transfer(cfg, tmp_path / "run")
    assert out["extra"]["skipped_lines"] == 2 and out["extra"]["bpb_student"] > 0
    saved = tmp_path / "run" / "model"
    ev = run_evaluate(compose("matt", [f"model={saved}", f"data.path={text}"], config_name="evaluate"))
    assert ev["extra"]["lines"] == 40
    with pytest.raises(ConfigError, match="data.path"):
        run_evaluate(compose("matt", [f"model={saved}"], config_name="evaluate"))
