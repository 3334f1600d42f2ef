
import pytest
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


def test_pareto_area_against_a_brute_force_grid():
    import numpy as np
    from molhit.run import pareto_area

    rng = np.random.default_rng(0)
    g = (np.arange(400) + 0.5) / 400
    gx, gy = np.meshgrid(g, g)
    for _ in range(5):
        pts = rng.uniform(size=(4, 2))
        dominated = np.zeros_like(gx, bool)
        for x, y in pts:
            dominated |= (gx <= x) & (gy <= y)
        assert pareto_area(pts) == pytest.approx(dominated.mean(), abs=5e-3)
    # a front that dominates another has the larger area; a point without valid samples (NaN) adds nothing
    assert pareto_area([(1.0, 0.2), (0.5, 0.4)]) == pytest.approx(0.2 + 0.5 * 0.2)
    assert pareto_area([(1.0, 0.2), (float("nan"), float("nan"))]) == pytest.approx(0.2)
    assert pareto_area([]) == 0.0


def test_paired_claims_are_inconclusive_when_a_seed_has_no_value():
    from molhit.run import _paired

    from paperworks import Claim

    ok = _paired(Claim.compare, "a", "s", "m", [0.3, 0.4, 0.5], baseline="b", baselines={"b": [0.1, 0.2, 0.3]},
                 better="higher")
    assert ok.rule["paired"] and ok.verdict == "supported"
    nan = _paired(Claim.compare, "a", "s", "m", [0.3, float("nan"), 0.5], baseline="b",
                  baselines={"b": [0.1, 0.2, 0.3]}, better="higher")
    assert not nan.rule["paired"] and nan.verdict == "inconclusive"
