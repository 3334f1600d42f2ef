from gtp.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

TINY = ("experiment=smoke", "seeds=1", "fit.prior_steps=20", "fit.model_steps=20", "fit.value_steps=20",
        "eval.max_steps=5", "td3bc.steps=5")


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("gtp", tmp_path / "run")
    assert doc["package"] == "gtp" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"pendulum_gtp_matches_or_exceeds_baselines", "pendulum_gtp_beats_mppi_small_n"} <= ids
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    for k in ("alpha_bar_T_near_zero", "ddim_equals_hand_written", "planner_never_steps_env",
              "ensemble_batched_equals_members", "models_save_load_roundtrip", "scripted_controller_both_corridors",
              "pendulum_gtp_beats_random_actions"):  # the brief's smoke: the planner beats random actions
        assert checks[k] == "supported", k
    assert (tmp_path / "run" / "metrics.csv").exists() and (tmp_path / "run" / "models.pt").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("gtp", run, monkeypatch, tmp_path, overrides=TINY)
    assert doc["experiment"] == "smoke"
