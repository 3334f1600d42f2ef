from hebbrnn.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"generalise_novel", "generalise_longer", "generalise_pattern", "orthogonal_scaffold", "abstract_local_rank",
          "hebbian_binding", "transfer_steps", "transfer_accuracy", "predictive_local_rank"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("hebbrnn", tmp_path / "run")
    assert doc["package"] == "hebbrnn" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert {c["id"] for c in doc["checks"]} == {"factored_equals_materialised", "parameters_matched"}
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    for png in ("accuracy.png", "pca_delay_states.png", "angles.png"):
        assert (tmp_path / "run" / png).exists()
    # the run's trained models are self-contained: the evaluate verb uses one without the training data
    from hebbrnn import HebbRNN

    saved = tmp_path / "run" / "model_hebb_seed0.pt"
    assert isinstance(HebbRNN.load(saved), HebbRNN)
    ev = run_cli("hebbrnn", tmp_path / "ev", "evaluate", f"model={saved}", "task.n_items=4", "task.chunks=[2,2]",
                 "task.longer_items=6", "task.longer_chunks=[2,2,2]", "task.new_pattern=[1,3]", "eval_batches=1")
    assert set(ev["extra"]) >= {"novel", "longer", "pattern"} and 0 <= ev["extra"]["novel"] <= 1


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("hebbrnn", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "seeds=2", "transfer.enabled=false",
                                              "predictive.enabled=false", "models=[hebb,hebb_off,gru]"))
    assert doc["experiment"] == "smoke"
    assert "transfer_steps" not in {c["id"] for c in doc["claims"]}


def test_bench_runs_in_miniature():
    cfg = compose("hebbrnn", ["experiment=bench", "bench.hidden=[32]", "bench.claim_hidden=32", "bench.repeats=3",
                              "bench.memory=false", "bench.batch_size=4"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["factored_speedup", "factored_vs_gru"]
    row = out["metrics"][0]
    assert row["factored_wall_s"] > 0 and row["materialised_wall_s"] > 0 and row["gru_params"] > 0


def test_evaluate_verb_bad_input(tmp_path):
    import pytest
    import torch
    from hebbrnn import HebbRNN
    from hebbrnn.verbs import load_model, run_evaluate

    with pytest.raises(ValueError, match="model="):
        run_evaluate(compose("hebbrnn", config_name="evaluate"))
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "none.pt")
    torch.save({"class": "Other"}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="does not hold"):
        load_model(tmp_path / "x.pt")
    HebbRNN(25, 8, 16).save(tmp_path / "m.pt")
    with pytest.raises(ValueError, match="cue channels"):
        run_evaluate(compose("hebbrnn", [f"model={tmp_path / 'm.pt'}", "task.n_items=4", "task.chunks=[2,2]"],
                             config_name="evaluate"))
