import time

import numpy as np
import pytest
from getolp.data import synthetic_histograms
from getolp.measure import measure, peak_mib, solve_full, solve_geto


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


@pytest.mark.slow
def test_peak_memory_of_the_full_lp_exceeds_geto_lp():
    """~20-40 s: two fresh processes importing scipy and POT."""
    shape = (16, 16)
    h = synthetic_histograms(np.random.default_rng(0), 4, shape, "random").reshape(4, -1)
    w = np.full(4, 0.25)
    assert peak_mib("full", h, shape, w) > 2 * peak_mib("geto", h, shape, w)
