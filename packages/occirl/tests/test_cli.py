from occirl.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("occirl", tmp_path / "run")
    assert doc["package"] == "occirl"
    assert doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"fewer_solves_N100", "sampled_fit_N100", "features_fit_feat8", "transfer", "approx_mirror_descent",
            "finite_horizon_fit"} <= ids
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    for cid in ("logpi_soft_optimal", "quadrature_equals_interpolation", "dual_gradient_fd", "feature_projection"):
        assert checks[cid] == "supported", cid
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("occirl", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"
