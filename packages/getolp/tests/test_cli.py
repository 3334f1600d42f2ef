from paperworks.testing import run_cli

CLAIMS = {"exact_objective", "exact_plans", "faster_than_full_lp", "less_memory_than_full_lp",
          "more_accurate_than_entropic"}


def test_smoke_cli_writes_results(tmp_path, monkeypatch):
    monkeypatch.setenv("POT_BACKEND_DISABLE_PYTORCH", "1")  # the smoke needs no torch: a faster start
    doc = run_cli("getolp", tmp_path / "run")
    assert doc["package"] == "getolp" and doc["experiment"] == "smoke"
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == CLAIMS
    # exactness is a property of the formulation, so it must hold even on the smoke grids
    for cid in ("exact_objective", "exact_plans", "more_accurate_than_entropic"):
        assert claims[cid]["verdict"] == "supported", claims[cid]
    assert claims["less_memory_than_full_lp"]["verdict"] == "inconclusive"  # smoke measures no memory
    assert [(c["id"], c["verdict"]) for c in doc["checks"]] == [("variables_O_N_1.5", "supported")]
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "scaling.png").exists()
