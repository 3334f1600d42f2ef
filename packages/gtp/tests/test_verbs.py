import json

import pytest
from gtp.data import save_dataset
from gtp.verbs import run_fit, run_plan

from paperworks.hydra_glue import compose, execute


def test_fit_then_plan_on_a_users_file(pendulum_data, tmp_path):
    path = save_dataset(pendulum_data, tmp_path / "mine.npz")
    cfg = compose("gtp", [f"data.path={path}", "fit.prior_steps=30", "fit.model_steps=20", "fit.value_steps=20"],
                  config_name="fit")
    execute("gtp", run_fit, cfg, tmp_path / "fit")
    assert (tmp_path / "fit" / "models.pt").exists()
    cfg = compose("gtp", [f"model={tmp_path / 'fit' / 'models.pt'}", "episodes=2", "n=4", "planner=mppi"],
                  config_name="plan")
    doc = execute("gtp", run_plan, cfg, tmp_path / "plan")
    assert doc["checks"][0]["verdict"] == "supported"
    extra = json.loads((tmp_path / "plan" / "results.json").read_text())["extra"]
    assert extra["mean_return"] < 0


def test_verbs_refuse_missing_inputs(tmp_path):
    with pytest.raises(ValueError, match="data.path"):
        run_fit(compose("gtp", [], config_name="fit"))
    with pytest.raises(FileNotFoundError):
        run_plan(compose("gtp", [f"model={tmp_path / 'none.pt'}"], config_name="plan"))
