import time

import numpy as np
import pytest
from getolp.measure import measure


def _allocate(mb):
    a = np.ones(int(mb * 2**20 // 8))
    return float(a.sum())


def _boom():
    raise ValueError("bad thing")


def test_returns_value_time_and_peak_memory():
    small = measure(_allocate, 1)
    big = measure(_allocate, 200)
    assert big.ok and big.value == pytest.approx(200 * 2**20 / 8)
    assert big.wall_s > 0
    if big.memory_method == "rss":
        assert big.peak_mb >= 150 and small.peak_mb < 100


def test_timeout_is_reported_not_hidden():
    t0 = time.perf_counter()
    m = measure(time.sleep, 30, timeout_s=0.5)
    assert m.status == "timeout" and m.value is None and "killed" in m.error
    assert time.perf_counter() - t0 < 10


def test_failure_is_reported():
    m = measure(_boom)
    assert m.status == "failed" and "ValueError: bad thing" in m.error
    assert set(m.row("x")) >= {"x_status", "x_wall_s", "x_peak_mb", "x_error"}
    with pytest.raises(ValueError, match="timeout_s"):
        measure(_allocate, 1, timeout_s=0)
