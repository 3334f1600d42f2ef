import pytest
from tikhonovgnn.bench import forward_backward, make_case, memory_mib, time_methods
from tikhonovgnn.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib


def test_math_task_checks_claims_1_and_3_hold():
    cfg = compose("tikhonovgnn", ["experiment=smoke", "tasks=[math]"])
    out = run(cfg)
    assert out["claims"] == []  # theorems verified to round-off are checks, not claims
    results = {c.id: c.verdict for c in out["checks"]}
    assert results == {k: "supported" for k in ("exact_minimiser", "cg_matches_dense",
                                                 "distinct_explanations_distinct_operators",
                                                 "nullspace_one_dimensional", "gauge_freedom",
                                                 "R_dense_on_connected_graphs")}
    assert out["extra"]["R_density_min"] == 1.0


def test_unknown_task_is_rejected():
    cfg = compose("tikhonovgnn", ["experiment=smoke", "tasks=[math,nope]"])
    with pytest.raises(ValueError, match="tasks"):
        run(cfg)


@pytest.mark.parametrize("method", ["dense", "cg", "cg_cheb", "gcn"])
@pytest.mark.parametrize("q_pool", [None, [1e-3, 1.0, 20.0]])
def test_bench_case_runs_forward_backward(method, q_pool):
    model, x, ei = make_case(method, 200, avg_degree=4, q_pool=q_pool, theta=[0.1, 1.0, 2.0])
    forward_backward(model, x, ei)
    assert x.grad is None and all(p.grad is None for p in model.parameters())
    if q_pool is not None and method != "gcn":
        assert float(model.q.max() / model.q.min()) > 1e3 and abs(float(model.q.mean()) - 1) < 1e-5


def test_bench_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        make_case("lu", 10)
    with pytest.raises(ValueError, match="method"):
        time_methods(["gcn", "lu"], 10)


def test_time_methods_interleaved_on_one_graph():
    res, n_edges, its = time_methods(["gcn", "cg"], 150, avg_degree=4, repeats=3, warmup=0)
    assert n_edges > 0 and res.repeats == 3 and len(its["cg"]) == 2 and min(its["cg"]) >= 1
    assert {r["candidate"] for r in res.rows()} == {"gcn", "cg"}
    ratio = res.speedup("gcn", over="cg")
    assert ratio.lower <= ratio.value <= ratio.upper and ratio.value > 0


@pytest.mark.slow
def test_peak_memory_of_a_dense_pass_grows_with_n():
    """~25-60 s on the shared machine: each measurement is a fresh process importing torch and PyG."""
    # the dense path holds N x N float32 matrices: at 1200 nodes that is 5.5 MiB each, the CG path none
    dense, cg = memory_mib("dense", 1200, avg_degree=4), memory_mib("cg", 1200, avg_degree=4)
    assert dense > 5.0 and dense > cg


def test_bench_task_in_process_gives_ratios(monkeypatch):
    import tikhonovgnn.bench

    calls = []

    def fake_memory(method, n, **kw):  # a fresh process per measurement costs ~10 s of imports: the slow test has it
        calls.append((method, n))
        return {"gcn": 1.0, "cg": 2.0, "dense": 3.0}[method] * n / 100 + 0.1 * calls.count((method, n))

    monkeypatch.setattr(tikhonovgnn.bench, "memory_mib", fake_memory)
    cfg = compose("tikhonovgnn", ["experiment=bench", "bench.sizes=[100,300]", "bench.dense_max=300",
                                  "bench.repeats=3", "bench.warmup=0", "bench.memory_min_nodes=300",
                                  "bench.memory_repeats=2", "ring.graphs=20", "ring.epochs=2",
                                  "bench.skew_small=3", "bench.skew_small_nodes=10", "bench.skew_large_nodes=100"])
    out = run(cfg)
    assert {c.id for c in out["claims"]} == {"cg_time_within_3x_gcn", "cg_cheb_time_within_3x_gcn",
                                             "auto_within_2x_cg_skewed", "cg_bounded_memory"}
    assert sorted(calls) == [("cg", 300), ("cg", 300), ("dense", 300), ("gcn", 300)]
    mem = next(c for c in out["claims"] if c.id == "cg_bounded_memory")
    assert mem.method.n == 2 and mem.method.has_ci  # two measurements give an interval
    assert mem.method.value == pytest.approx(6.15 / (300 * 300 * 4 / 2**20))  # mean of the two CG calls / dense N x N
    rows = [r for r in out["metrics"] if r["task"] == "bench"]
    assert {(r["method"], r["num_nodes"]) for r in rows} == {(m, n) for m in ("gcn", "cg", "cg_cheb", "dense")
                                                             for n in (100, 300)}
    assert {r["method"] for r in out["metrics"] if r["task"] == "bench_skewed"} == {"auto", "cg"}
    assert all(r["cg_iters_forward"] >= 1 for r in rows if r["method"].startswith("cg"))
    assert all(r["time_ratio_vs_gcn"] > 0 and r["cpu_s"] >= 0 for r in rows if r["method"] != "gcn")
    assert all(("peak_extra_mib" in r) == (r["method"] != "cg_cheb") for r in rows if r["num_nodes"] == 300)


def test_smoke_in_process_without_matplotlib(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("tikhonovgnn", run, monkeypatch, tmp_path)
    assert doc["experiment"] == "smoke"


def test_colours_tunes_on_separate_seeds_and_gates_the_claim_on_the_cap():
    from tikhonovgnn.run import tuning_seeds

    cfg = compose("tikhonovgnn", ["experiment=smoke", "tasks=[colours]", "baselines=[gin]"])
    out = run(cfg)
    rows = out["metrics"]
    tune = {r["seed"] for r in rows if r["task"] == "colours_tuning"}
    assert tune == set(tuning_seeds(cfg, out["seeds"])) and not tune & set(out["seeds"])
    # smoke: 1 epoch, so every run hits the cap and the claim may not give a verdict
    assert all(r["hit_cap"] for r in rows if r["task"] == "colours")
    (claim,) = out["claims"]
    cap = [r for r in claim.rule["requires"] if "epoch cap" in r["what"]]
    assert claim.verdict == "inconclusive" and len(cap) == 1 and cap[0]["met"] is False
    # the chosen lr is the lowest mean validation loss among the scored ones (extended off an edge if needed)
    for name, lr in out["extra"]["colours_lr"].items():
        scored = {r["lr"]: r["best_val_loss"] for r in rows if r["task"] == "colours_tuning" and r["model"] == name}
        assert lr == min(scored, key=lambda v: (scored[v], v)) and len(scored) >= 2
    with pytest.raises(ValueError, match="tune_seeds"):
        tuning_seeds(compose("tikhonovgnn", ["experiment=smoke", "colours.tune_seeds=0"]), [0])
