import sys

from cmcboot.run import run

from paperworks.hydra_glue import compose, execute


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    for name in list(sys.modules):
        if name == "cmcboot.plot" or name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    cfg = compose("cmcboot", ["experiment=smoke", "datasets_per_seed=4", "n_boot=30",
                              "claim_resamples=50"])
    doc = execute("cmcboot", run, cfg, tmp_path)
    assert (tmp_path / "results.json").exists()
    assert not list(tmp_path.glob("*.png"))
    assert len(doc["claims"]) == 13


def test_comparisons_are_paired_over_the_shared_resamples():
    out = run(compose("cmcboot", ["experiment=smoke", "datasets_per_seed=4", "n_boot=30", "claim_resamples=50"]))
    by_id = {c.id: c for c in out["claims"]}
    for cid, base in (("percentile_beats_clt_small", "clt"), ("percentile_beats_episodic", "episodic_percentile")):
        c = by_id[cid]
        assert c.rule["kind"] == "threshold" and c.rule["threshold"] == 0.0 and c.method.method.endswith("paired-basic")
        assert {"model_percentile", base} <= set(c.baselines)
    # near nominal is two-sided
    assert by_id["qstar_1_0_shortT_cov95"].rule["kind"] == "within"
