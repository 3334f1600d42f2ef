from hierwm.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"hier_beats_flat_fidelity", "hier_beats_flat_mse", "df_probe_beats_tf", "tf_more_stable_than_df",
          "df_tf_probe_beats_tf", "df_tf_stabler_than_df", "steering_responsive", "sota_driving_suite"}


def test_smoke_cli_writes_results(tmp_path):
    # the smoke experiment with fewer steps: the 20-step smoke training is tested in test_train.py
    doc = run_cli("hierwm", tmp_path / "run", "train.steps=3", "eval.encoder_steps=5", "eval.sequences=4",
                  "eval.steer_contexts=4")
    assert doc["package"] == "hierwm"
    assert doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert all(c["verdict"] == "supported" for c in doc["checks"]), [c["id"] for c in doc["checks"]]
    sota = next(c for c in doc["claims"] if c["id"] == "sota_driving_suite")
    assert sota["verdict"] == "inconclusive"
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("hierwm", run, monkeypatch, tmp_path,
                                   ("experiment=smoke", "variants=[hier_df_tf,flat_df_tf]", "train.steps=2",
                                    "eval.encoder_steps=2", "eval.sequences=4", "eval.steer_contexts=4"))
    assert doc["experiment"] == "smoke"
