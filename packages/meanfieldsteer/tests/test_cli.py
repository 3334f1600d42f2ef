import csv

import numpy as np
import pytest
from meanfieldsteer.data import load_samples
from meanfieldsteer.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The installed console script on experiment=smoke (one run shared by the tests that read it)."""
    d = tmp_path_factory.mktemp("smoke") / "run"
    return run_cli("meanfieldsteer", d), d


def test_smoke_cli_writes_results(smoke_run):
    doc, d = smoke_run
    assert doc["package"] == "meanfieldsteer" and doc["experiment"] == "smoke"
    assert "exp1_w1_beats_baselines_lambda5" in {c["id"] for c in doc["claims"]}
    assert {"linear_reward_is_pointwise_fk", "mixture_score_equals_autograd"} <= {c["id"] for c in doc["checks"]}
    assert all(c["verdict"] == "supported" for c in doc["checks"])


def test_smoke_mode_mass_within_005_and_closer_than_gradient(smoke_run):
    """Exp 1, N = 256, 50 steps, λ = 5: mean-field's mode mass within 0.05 of μ*, closer than gradient-only."""
    _, d = smoke_run
    rows = list(csv.DictReader(open(d / "metrics.csv")))
    star = float(rows[0]["left_mass_star"])
    err = {
        m: np.mean([abs(float(r["left_mass"]) - star) for r in rows if r["method"] == m])
        for m in ("meanfield", "gradient")
    }
    assert err["meanfield"] < 0.05
    assert err["meanfield"] < err["gradient"]


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib(
        "meanfieldsteer", run, monkeypatch, tmp_path, overrides=("experiment=smoke", "exp1.enabled=false")
    )
    assert doc["experiment"] == "smoke"


def test_load_samples_skips_bad_rows(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("x\n-2.0\n-1.5\nabc\n1.0,2.0\nnan\n2.0\n")
    x, info = load_samples(p)
    assert x.shape == (3, 1) and info["skipped"] == 3 and info["bad_lines"] == [4, 5, 6]
    with pytest.raises(FileNotFoundError, match="data.path"):
        load_samples(tmp_path / "none.csv")
    (tmp_path / "one.csv").write_text("1.0\n")
    with pytest.raises(ValueError, match="fewer than 2"):
        load_samples(tmp_path / "one.csv")


def test_steer_verb_on_a_users_file(tmp_path):
    """The ``steer`` verb's config and run (in-process: the console script itself is tested by the smoke run)."""
    from meanfieldsteer.verbs import run_steer

    from paperworks.hydra_glue import compose

    p = tmp_path / "target.csv"
    p.write_text("\n".join(["-2.1", "-1.9", "-2.0", "bad", "2.0"]) + "\n")
    cfg = compose("meanfieldsteer", [f"data.path={p}", "n=64", "n_steps=20", "device=cpu"], config_name="steer")
    out = run_steer(cfg, tmp_path)
    row = out["metrics"][0]
    assert (tmp_path / "samples.npz").exists()
    assert row["skipped_rows"] == 1
    assert row["mmd2_steered"] < row["mmd2_prior"]
    with pytest.raises(ValueError, match="data.path"):
        run_steer(compose("meanfieldsteer", [], config_name="steer"), tmp_path)
