from paperworks.testing import run_cli

CLAIMS = {"exact_objective", "exact_certified", "exact_plans", "more_accurate_than_entropic"}


def test_smoke_cli_writes_results(tmp_path, monkeypatch):
    monkeypatch.setenv("POT_BACKEND_DISABLE_PYTORCH", "1")  # the smoke needs no torch: a faster start
    doc = run_cli("getolp", tmp_path / "run", "experiment=smoke", "+solver.options.simplex_scale_strategy=4")
    assert doc["package"] == "getolp" and doc["experiment"] == "smoke"
    assert doc["config"]["solver"]["options"] == {"simplex_scale_strategy": 4}
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == CLAIMS  # smoke has no ratio section: no speed or memory claim
    # exactness is a property of the formulation, so it must hold on every input class of the smoke
    for cid in CLAIMS:
        assert claims[cid]["verdict"] == "supported", claims[cid]
    assert "blobs" in claims["exact_certified"]["notes"] and "dirac" in claims["exact_certified"]["notes"]
    assert [(c["id"], c["verdict"]) for c in doc["checks"]] == [("variables_O_N_1.5", "supported")]
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "scaling.png").exists()
