from tcgap.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"bound_gaussian_task", "bound_gaussian_class", "slope_near_1_8_gaussian", "slope_excludes_1_16_gaussian",
          "disjoint_tc_backbone", "disjoint_cf_budget", "ecf_rate_alpha1.5", "clip_steepens_alpha1.5",
          "drift_linear_r", "drift_loglog_slope", "schedule_vs_fixed_final", "schedule_competitive_final",
          "schedule_vs_fixed_avg_inc", "schedule_competitive_avg_inc"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("tcgap", tmp_path / "run")
    assert doc["package"] == "tcgap" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert {c["id"] for c in doc["checks"]} == {"ncm_class_il_equals_joint", "slda_class_il_equals_joint",
                                                 "class_il_hit_implies_task_il_hit"}
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "gap_vs_gamma.png").exists() and (tmp_path / "run" / "drift_vs_lr.png").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("tcgap", run, monkeypatch, tmp_path,
                                   overrides=["seeds=1", "decomposition.enabled=false", "schedule.enabled=false",
                                              "ecf.enabled=false", "drift.enabled=false", "learners=[ncm,ce]"])
    assert doc["experiment"] == "smoke"
    assert not list(tmp_path.glob("**/*.png"))


def test_bench_runs_in_miniature():
    cfg = compose("tcgap", ["experiment=bench", "bench.widths=[32]", "bench.repeats=3", "bench.memory=false"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["gamma_cheaper_w32"]
    row = out["metrics"][0]
    assert row["gamma_min_wall_median_s"] > 0 and row["tc_gap_ce_wall_median_s"] > 0
