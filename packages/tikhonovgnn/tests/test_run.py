import pytest
from tikhonovgnn.bench import measure, measure_series
from tikhonovgnn.run import run

from paperworks.hydra_glue import compose


def test_math_task_supports_claims_1_and_3():
    cfg = compose("tikhonovgnn", ["experiment=smoke", "tasks=[math]"])
    out = run(cfg)
    verdicts = {c.id: c.verdict for c in out["claims"]}
    assert verdicts == {"exact_minimiser": "supported", "distinct_explanations_distinct_operators": "supported"}
    assert out["extra"]["R_density_min"] == 1.0


def test_unknown_task_is_rejected():
    cfg = compose("tikhonovgnn", ["experiment=smoke", "tasks=[math,nope]"])
    with pytest.raises(ValueError, match="tasks"):
        run(cfg)


@pytest.mark.parametrize("method", ["dense", "cg", "gcn"])
def test_bench_measure_small(method):
    r = measure(method, 200, avg_degree=4, repeats=1)
    assert r["time_s"] > 0 and r["num_nodes"] == 200 and r["peak_extra_mib"] >= 0


def test_bench_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        measure("lu", 10)


def test_bench_task_in_process_gives_ratios():
    cfg = compose("tikhonovgnn", ["experiment=bench", "bench.sizes=[100,300]", "bench.dense_max=300",
                                  "bench.isolate=false", "bench.repeats=1"])
    out = run(cfg)
    assert {c.id for c in out["claims"]} == {"cg_time_within_10x_gcn", "cg_bounded_memory"}
    rows = out["metrics"]
    assert {(r["method"], r["num_nodes"]) for r in rows} == {(m, n) for m in ("gcn", "cg", "dense") for n in (100, 300)}
    assert all(r["time_ratio_vs_gcn"] > 0 for r in rows if r["method"] != "gcn")


def test_measure_series_sorts_sizes():
    assert [r["num_nodes"] for r in measure_series("gcn", [300, 100], repeats=1)] == [100, 300]
