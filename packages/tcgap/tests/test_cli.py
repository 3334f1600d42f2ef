from tcgap.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"bound_gaussian_task", "bound_gaussian_class", "slope_near_1_8_gaussian", "slope_excludes_1_16_gaussian",
          "disjoint_tc_backbone", "disjoint_cf_budget", "ecf_rate_alpha1.5", "clip_steepens_alpha1.5",
          "drift_linear_r", "drift_loglog_slope", "schedule_vs_fixed_final", "schedule_competitive_final",
          "schedule_vs_fixed_avg_inc", "schedule_competitive_avg_inc"}


GAP_CLAIMS = {"bound_gaussian_task", "bound_gaussian_class", "slope_near_1_8_gaussian", "slope_excludes_1_16_gaussian"}
LIGHT = ("decomposition.enabled=false", "schedule.enabled=false", "ecf.enabled=false", "drift.enabled=false")


def test_smoke_cli_writes_results(tmp_path):
    # the installed script on the Gaussian part of smoke (the torch studies run in-process below: one import)
    doc = run_cli("tcgap", tmp_path / "run", "experiment=smoke", *LIGHT)
    assert doc["package"] == "tcgap" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == GAP_CLAIMS
    assert {c["id"] for c in doc["checks"]} == {"ncm_class_il_equals_joint", "slda_class_il_equals_joint",
                                                 "class_il_hit_implies_task_il_hit"}
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists() and (tmp_path / "run" / "gap_vs_gamma.png").exists()


def test_full_smoke_in_process_writes_every_claim_and_plot(tmp_path):
    from paperworks.hydra_glue import execute

    doc = execute("tcgap", run, compose("tcgap", ["experiment=smoke"]), tmp_path)
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    for png in ("gap_vs_gamma.png", "ecf_vs_K.png", "drift_vs_lr.png"):
        assert (tmp_path / png).exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("tcgap", run, monkeypatch, tmp_path,
                                   overrides=["seeds=1", *LIGHT, "learners=[ncm,ce]"])
    assert doc["experiment"] == "smoke"
    assert not list(tmp_path.glob("**/*.png"))


def test_bench_runs_in_miniature():
    cfg = compose("tcgap", ["experiment=bench", "bench.widths=[32]", "bench.repeats=3", "bench.memory=false"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["gamma_cheaper_w32"]
    row = out["metrics"][0]
    assert row["gamma_min_wall_median_s"] > 0 and row["tc_gap_ce_wall_median_s"] > 0


def _user_file(tmp_path, gen_seed=0, with_split=False):
    import numpy as np
    from tcgap.data import gaussian_tasks

    gen = gaussian_tasks(np.random.default_rng(gen_seed), gamma=12.0, d=10)
    X, y = gen["sample"](40)
    X[5, 2] = np.nan
    extra = {"split": np.where(np.arange(len(y)) % 4 == 0, "gamma", np.where(np.arange(len(y)) % 4 == 1, "test",
                                                                              "train"))} if with_split else {}
    tasks = gen["task_of_class"][y]
    np.savez(tmp_path / "feats.npz", X=X, y=y, tasks=tasks, **extra)
    np.save(tmp_path / "X.npy", X[:30])
    return X, y


def test_diagnose_and_predict_verbs_on_a_users_features(tmp_path):
    import json

    import numpy as np
    from tcgap import SLDA

    X, y = _user_file(tmp_path, with_split=True)
    from tcgap.diagnose import run_diagnose

    from paperworks.hydra_glue import execute

    out = tmp_path / "diag"  # in-process; the console script's dispatch is tested below
    execute("tcgap", run_diagnose, compose("tcgap", [f"data.path={tmp_path / 'feats.npz'}", "learner=slda"],
                                           config_name="diagnose"), out)
    doc = json.loads((out / "results.json").read_text())
    assert doc["extra"]["skipped_rows"] == [5] and doc["extra"]["gap_joint"] == 0.0
    assert 0 <= doc["extra"]["gap_task_il"] <= 1 and doc["extra"]["gamma_task"] > 0
    assert doc["extra"]["n"] == {"train": 200, "gamma": 100, "test": 99}  # row 5 (a test row) skipped
    m = SLDA.load(out / "learner.pt")
    from tcgap.diagnose import run_predict

    pout = tmp_path / "pred"
    execute("tcgap", run_predict, compose("tcgap", [f"model={out / 'learner.pt'}", f"data.path={tmp_path / 'X.npy'}"],
                                          config_name="predict"), pout)
    lines = (pout / "predictions.csv").read_text().strip().splitlines()[1:]
    ok = np.all(np.isfinite(X[:30]), 1)
    assert [int(r.split(",")[1]) for r in lines] == m.predict(X[:30][ok]).tolist()


def test_diagnose_bad_input(tmp_path):
    import numpy as np
    import pytest
    from tcgap.diagnose import load_features, run_diagnose

    with pytest.raises(ValueError, match="data.path"):
        run_diagnose(compose("tcgap", config_name="diagnose"))
    with pytest.raises(FileNotFoundError):
        load_features(tmp_path / "none.npz")
    np.savez(tmp_path / "a.npz", X=np.ones((10, 2)), y=np.arange(10) % 2, tasks=np.arange(10) % 3)
    with pytest.raises(ValueError, match="one task"):
        load_features(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", X=np.ones((10, 2)), y=np.arange(10) % 2)
    with pytest.raises(ValueError, match="task_of_class"):
        load_features(tmp_path / "b.npz")
