from molspecflow.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib

FAST = ("experiment=smoke", "data.n_molecules=200", "eval.n_candidates=4", "train.steps=3", "eval.n_retrieval=4", "eval.n_simulation=4",
        "eval.n_denovo=1", "eval.k=2", "eval.denovo_steps=2", "eval.sim_steps=2")
CLAIMS = {"incomplete_beats_paired_low", "incomplete_beats_paired_high", "joint_beats_single_retrieval",
          "joint_beats_single_simulation", "joint_beats_single_denovo", "regulariser_raises_formula_match",
          "regulariser_raises_exact_match", "transfer_external"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("molspecflow", tmp_path / "run", *FAST)
    assert doc["package"] == "molspecflow" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert all(c["statement"].startswith("[simulated spectra]") or c["id"] == "transfer_external"
               for c in doc["claims"])
    verdicts = {c["id"]: c["verdict"] for c in doc["claims"]}
    assert verdicts["transfer_external"] == "inconclusive"   # no external benchmark offline
    checks = {c["id"]: c["verdict"] for c in doc["checks"]}
    assert checks["spectrum_only_rows_carry_no_molecule"] == "supported"
    assert checks["precursor_is_exact_mass_plus_proton"] == "supported"
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "molspecflow.pt").exists()


def test_user_file_through_the_config(tmp_path):
    from matchms.exporting import save_as_mgf
    from molspecflow import FragmentSimulator, MolSpecFlow

    from paperworks.hydra_glue import compose, execute

    sim = FragmentSimulator(seed=0)
    specs = [sim.simulate(s) for s in ("CC(=O)Nc1ccc(O)cc1", "COc1ccc(CCN)cc1")]
    save_as_mgf(specs, str(tmp_path / "mine.mgf"))
    MolSpecFlow(dim=16, depth=1, heads=2).save(tmp_path / "m.pt")
    cfg = compose("molspecflow", ["experiment=smoke", f"data.path={tmp_path / 'mine.mgf'}",
                                  f"model_path={tmp_path / 'm.pt'}", "eval.k=2", "eval.denovo_steps=2"])
    doc = execute("molspecflow", run, cfg, tmp_path / "run")
    assert doc["extra"]["path"].endswith("mine.mgf") and doc["checks"][0]["verdict"] == "supported"
    assert "top1" in (tmp_path / "run" / "metrics.csv").read_text()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("molspecflow", run, monkeypatch, tmp_path, overrides=FAST)
    assert doc["experiment"] == "smoke"
