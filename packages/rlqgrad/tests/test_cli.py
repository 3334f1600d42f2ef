from rlqgrad.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

TINY = ("experiment=smoke", "claim1.n_circuits=4", "train.budget=30", "controls.budget=12", "meta.total_steps=64")


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("rlqgrad", tmp_path / "run", *TINY)
    assert doc["package"] == "rlqgrad"
    assert doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"claim1_gradient_variance_decays", "claim2_step_cost_independent_of_hilbert_dim",
            "claim3_step_speedup_vs_adam-parameter-shift", "claim4_4x2_beats_zeroth_order"} <= ids
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    for k in ("simulator_equals_default_qubit", "differentiators_equal_qml_grad", "ledger_parameter_shift_2P",
              "ledger_spsa_2_per_step", "ledger_rlqgrad_1_per_step", "spectral_norms_at_most_1"):
        assert checks[k] == "supported", k
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "policy.pt").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("rlqgrad", run, monkeypatch, tmp_path, overrides=(*TINY, "+identity_checks=false"))
    assert doc["experiment"] == "smoke"
