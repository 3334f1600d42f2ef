import time

import numpy as np
import pytest
from getolp.data import synthetic_histograms
from getolp.measure import fresh_call, fresh_process_runs, measure, peak_mib, solve_full, solve_geto


def _allocate(mb):
    a = np.ones(int(mb * 2**20 // 8))
    return float(a.sum())


def _boom():
    raise ValueError("bad thing")


def test_returns_value_and_wall_and_cpu_time():
    m = measure(_allocate, 50)
    assert m.ok and m.value == pytest.approx(50 * 2**20 / 8)
    assert m.wall_s > 0 and m.cpu_s is not None and m.cpu_s >= 0
    assert m.peak_mb is None  # memory is measured by paperworks.bench.peak_memory, not here


def test_timeout_is_reported_not_hidden():
    t0 = time.perf_counter()
    m = measure(time.sleep, 30, timeout_s=0.5)
    assert m.status == "timeout" and m.value is None and "killed" in m.error
    assert time.perf_counter() - t0 < 10


def test_failure_is_reported():
    m = measure(_boom)
    assert m.status == "failed" and "ValueError: bad thing" in m.error
    assert set(m.row("x")) >= {"x_status", "x_wall_s", "x_cpu_s", "x_peak_mb", "x_error"}
    with pytest.raises(ValueError, match="timeout_s"):
        measure(_allocate, 1, timeout_s=0)


def test_solve_units_agree_in_process():
    shape = (5, 5)
    h = synthetic_histograms(np.random.default_rng(0), 2, shape, "random").reshape(2, -1)
    w = np.array([0.3, 0.7])
    (_, g), (_, f) = solve_geto(h, shape, w), solve_full(h, shape, w)
    assert g["objective"] == pytest.approx(f["objective"], rel=1e-7)
    with pytest.raises(ValueError, match="kind"):
        peak_mib("ipm", h, shape, w)


def test_fresh_call_times_and_measures_one_solve():
    """~3-6 s: one spawned process importing scipy and POT."""
    shape = (6, 6)
    h = synthetic_histograms(np.random.default_rng(1), 2, shape, "random").reshape(2, -1)
    w = np.array([0.4, 0.6])
    r = fresh_call("geto", h, shape, w, {"solver": "highs", "highs_options": {"presolve": True}}, timeout_s=120)
    assert r["status"] == "ok" and r["wall_s"] > 0 and r["cpu_s"] >= 0 and r["peak_mib"] is not None
    _, ref = solve_full(h, shape, w)
    assert r["value"][1]["objective"] == pytest.approx(ref["objective"], rel=1e-7)
    with pytest.raises(ValueError, match="repeats"):
        fresh_process_runs({"geto": ("geto", {})}, h, shape, w, repeats=0, timeout_s={"geto": 1})


@pytest.mark.slow
def test_fresh_rounds_alternate_and_collect_a_bench_result():
    shape = (8, 8)
    h = synthetic_histograms(np.random.default_rng(2), 3, shape, "random").reshape(3, -1)
    w = np.full(3, 1 / 3)
    runs = fresh_process_runs({"geto": ("geto", {}), "full_lp": ("full", {})}, h, shape, w, repeats=3,
                              timeout_s={"geto": 120, "full_lp": 120})
    assert [c["candidate"] for c in runs["calls"]] == ["geto", "full_lp", "full_lp", "geto", "geto", "full_lp"]
    assert runs["bench"].repeats == 3 and all(runs["ok"].values())
    assert runs["bench"].speedup("geto", over="full_lp").lower is not None


@pytest.mark.slow
def test_peak_memory_of_the_full_lp_exceeds_geto_lp():
    """~20-40 s: two fresh processes importing scipy and POT."""
    shape = (16, 16)
    h = synthetic_histograms(np.random.default_rng(0), 4, shape, "random").reshape(4, -1)
    w = np.full(4, 0.25)
    assert peak_mib("full", h, shape, w) > 2 * peak_mib("geto", h, shape, w)
