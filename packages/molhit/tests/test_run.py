
from molhit import decoupled_encoding
from molhit.data import graphs_from_smiles, load_moses
from molhit.run import run, train_peak_memory

from paperworks.hydra_glue import compose


def test_bench_in_process():
    cfg = compose("molhit", ["experiment=smoke", "bench.enabled=true", "bench.steps=2", "bench.repeats=3",
                             "bench.n_samples=4", "data.n_train=100", "device=cpu",
                             "bench.memory=false"])  # the spawned memory probe is tested below, once
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["hddm_step_cost"]
    bench = [r for r in out["metrics"] if r["table"] == "bench"]
    assert {r["process"] for r in bench} == {"hierarchical", "absorbing", "marginal"}
    assert all(r["sample_mol_per_s"] > 0 and r["train_step_cpu_ms"] > 0 for r in bench)
    # the timing rows come from paperworks.bench: every candidate, wall and CPU medians
    timing = [r for r in out["metrics"] if r["table"] == "timing"]
    assert {r["candidate"] for r in timing} == {"hierarchical", "absorbing", "marginal"}
    assert out["claims"][0].method.has_ci


def test_peak_memory_probe_measures_training_in_a_fresh_process():
    # a batch of 256 graphs through a d=128, 4-layer denoiser holds hundreds of MiB of activations
    cfg = compose("molhit", ["experiment=smoke", "data.n_train=100", "device=cpu", "train.batch_size=256",
                             "model.d_model=128", "model.n_layers=4"])
    data = graphs_from_smiles(load_moses("train", 100, 0), decoupled_encoding())
    mem = train_peak_memory(cfg, "hierarchical", data, 0, "cpu", steps=2)
    assert mem["memory_method"] in ("vmhwm", "tracemalloc")
    assert 100 < mem["train_peak_mb"] < 10_000
