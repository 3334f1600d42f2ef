from mcr2opt.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"error_bound", "error_bound_control", "pl_inequality", "quadratic_growth", "linear_gd",
          "linear_heavy_ball", "linear_adam", "linear_random_starts", "linear_pgd_sphere", "control_sublinear",
          "geometry_orthogonal", "accuracy_competitive"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("mcr2opt", tmp_path / "run")
    assert doc["package"] == "mcr2opt" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    bad = [c["id"] for c in doc["checks"] if c["verdict"] != "supported" and not c["id"].startswith("step_grid")]
    assert not bad, bad
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "distance.png").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("mcr2opt", run, monkeypatch, tmp_path, overrides=(
        "experiment=smoke", "seeds=1", "expA.methods=[gd]", "expA.pgd_sphere=false", "expB.enabled=false",
        "expA.step_grid=[0.3,1.0,2.0]", "expA.kappa_dirs=1", "expA.hessian=false"))
    assert doc["experiment"] == "smoke"
    assert "linear_gd" in {c["id"] for c in doc["claims"]}
