from m2le.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

STREAM_CLAIMS = {f"{c}_{s}" for c in ("elementwise_beats_scalar", "tsp_improves_him", "tsp_reduces_merge_drop")
                 for s in ("domain", "class", "gauss_ov0")}
CHECKS = {"him_equals_numerical_argmin", "scalar_equals_pm_alpha", "fisher_merge_equals_him", "merge_takes_no_data",
          "him_m_in_unit_interval"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("m2le", tmp_path / "run", "experiment=smoke")
    assert doc["package"] == "m2le" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == STREAM_CLAIMS
    assert {c["id"] for c in doc["checks"]} == CHECKS
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "acc_matrices.png").exists() and (tmp_path / "run" / "modulations.png").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("m2le", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "streams.class.enabled=false",
                                              "streams.gauss.enabled=false", "methods=[seq,m2le]"))
    assert doc["experiment"] == "smoke"
