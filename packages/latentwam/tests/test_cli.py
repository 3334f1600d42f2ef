from latentwam.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"latent_beats_vla_success_20", "latent_matches_pixel_success", "prior_latents_predict_ball_future",
          "regulariser_prevents_collapse", "regulariser_helps_success", "reach_control_no_gain",
          "claim4_benchmarks_and_robots"}


def test_smoke_cli_writes_results_and_a_model_the_evaluate_verb_uses(tmp_path):
    doc = run_cli("latentwam", tmp_path / "run")
    assert doc["package"] == "latentwam" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    model = tmp_path / "run" / "latent_wam.pt"
    assert model.exists()
    from latentwam.verbs import run_evaluate

    from paperworks.hydra_glue import compose, execute

    cfg = compose("latentwam", [f"model={model}", "episodes=6"], config_name="evaluate")
    ev = execute("latentwam", run_evaluate, cfg, tmp_path / "ev")  # the verb, in-process: no data needed
    assert ev["extra"]["evaluation"]["episodes"] == 6


def test_evaluate_verb_missing_model(tmp_path):
    import pytest
    from latentwam.verbs import run_evaluate

    from paperworks.hydra_glue import compose, execute

    cfg = compose("latentwam", [f"model={tmp_path}/missing.pt"], config_name="evaluate")
    with pytest.raises(FileNotFoundError, match="no model file"):
        execute("latentwam", run_evaluate, cfg, tmp_path / "bad")


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("latentwam", run, monkeypatch, tmp_path, overrides=(
        "experiment=smoke", "intercept.arms=[vla]", "ablations.arms=[]", "reach.enabled=false", "eval.episodes=4",
        "train.steps=2"))
    assert doc["experiment"] == "smoke"


def test_train_verb_on_a_lerobot_folder(tmp_path, write_lerobot):

    from paperworks.hydra_glue import compose, execute

    key = write_lerobot(tmp_path / "ds", "image", lengths=(14, 14), size=24)
    cfg = compose("latentwam", [f"data.path={tmp_path / 'ds'}", f"data.image_key={key}", "train.steps=3",
                                "train.batch_size=4", "arm=vla", "model.chunk=4", "model.future_offsets=[2,4]"],
                  config_name="train")
    from latentwam.verbs import run_train

    doc = execute("latentwam", run_train, cfg, tmp_path / "out")
    assert (tmp_path / "out" / "model.pt").exists()
    assert doc["extra"]["samples"] == 2 * (14 - 4)
