from molhit.run import run

from paperworks.hydra_glue import compose


def test_bench_in_process():
    cfg = compose("molhit", ["experiment=smoke", "bench.enabled=true", "bench.steps=2", "bench.repeats=2",
                             "bench.n_samples=4", "data.n_train=100", "device=cpu"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["hddm_step_cost"]
    assert {r["process"] for r in out["metrics"]} == {"hierarchical", "absorbing", "marginal"}
    assert all(r["sample_mol_per_s"] > 0 for r in out["metrics"])
