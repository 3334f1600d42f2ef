from tmevolve.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

TINY = ("data.n_train=16", "data.n_val=8", "data.n_test=16", "data.grid=8", "train.epochs=1", "model.hidden=16")


def test_smoke_cli_writes_results_and_a_reloadable_model(tmp_path):
    doc = run_cli("tmevolve", tmp_path / "run", *TINY)
    assert doc["package"] == "tmevolve" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"c1_infiltration", "c3_region_ari", "c3_flux_lt", "c1_real_cohorts"} <= ids
    assert {c["id"]: c["verdict"] for c in doc["checks"]}["save_reload"] == "supported"
    assert (tmp_path / "run" / "metrics.csv").exists() and (tmp_path / "run" / "model.pt").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("tmevolve", run, monkeypatch, tmp_path, overrides=("experiment=smoke", *TINY))
    assert doc["experiment"] == "smoke"
