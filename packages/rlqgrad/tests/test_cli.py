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


def test_optimize_verb_deploys_a_saved_policy_on_a_users_csv(tmp_path, policy):
    from rlqgrad.data import load_split

    path = policy.save(tmp_path / "pi.pt")
    sp = load_split("moons", 4, seed=0)
    lines = ["a,b,c,d,label"] + [",".join(f"{v:.4f}" for v in x) + f",{int(t > 0)}"
                                 for x, t in zip(sp.X_train[:60], sp.y_train[:60])]
    lines[5] = "1.0,oops,2.0,3.0,1"  # a bad row: skipped and counted
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    import pytest
    from rlqgrad.verbs import run_optimize

    from paperworks.hydra_glue import compose, execute

    cfg = compose("rlqgrad", [f"policy={path}", f"data.path={tmp_path / 'd.csv'}", "budget=30"], config_name="optimize")
    doc = execute("rlqgrad", run_optimize, cfg, tmp_path / "out")
    assert doc["extra"]["bad_rows"] == [6] and doc["extra"]["evaluations"] <= 30
    cfg = compose("rlqgrad", [f"policy={tmp_path / 'nope.pt'}"], config_name="optimize")
    with pytest.raises(FileNotFoundError, match="no policy file"):
        execute("rlqgrad", run_optimize, cfg, None)
