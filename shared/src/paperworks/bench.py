"""The timing harness: interleaved repeats, pinned threads, paired ratios with intervals.

Block timing (all repeats of A, then all of B) flips verdicts on a shared machine: a burst of
load lands on one candidate. :func:`compare` interleaves the candidates (A B, B A, A B, ...),
pins the thread count for all of them, and reports per-candidate medians of wall *and* CPU
time, and the per-repeat paired ratio's median with a bootstrap interval::

    from paperworks.bench import compare

    res = compare({"naive": lambda: f(x), "batched": lambda: g(x)}, repeats=15, warmup=2, threads=1)
    res.speedup("batched", over="naive")   # Estimate: median of naive_r / batched_r, bootstrap CI
    res.rows()                             # one row per candidate for metrics.csv

:func:`peak_memory` measures a call's peak memory in a fresh process (CPU: the rise of the peak
resident set, ``VmHWM``, after set-up; CUDA: the allocator's peak).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from paperworks.stats import Estimate, bootstrap_ci


@contextmanager
def pinned_threads(threads: int | str | None):
    """Temporarily pin torch and BLAS/OpenMP pools to ``threads`` (``None``: leave them)."""
    if threads is None:
        yield None
        return
    from paperworks.threads import resolve_threads

    n = resolve_threads(threads)
    restore = []
    try:
        from threadpoolctl import threadpool_limits

        lim = threadpool_limits(limits=n)
        restore.append(lim.restore_original_limits)
    except ImportError:  # pragma: no cover
        pass
    import sys

    if "torch" in sys.modules:
        import torch

        old = torch.get_num_threads()
        torch.set_num_threads(n)
        restore.append(lambda: torch.set_num_threads(old))
    try:
        yield n
    finally:
        for f in reversed(restore):
            f()


@dataclass
class BenchResult:
    """Per-candidate wall and CPU times (seconds, one entry per repeat) from :func:`compare`."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]
    threads: int | None
    repeats: int
    warmup: int
    level: float = 0.95
    extra: dict = field(default_factory=dict)

    def median(self, name: str, kind: str = "wall") -> float:
        return float(np.median(self._times(name, kind)))

    def _times(self, name: str, kind: str) -> np.ndarray:
        table = {"wall": self.wall, "cpu": self.cpu}
        if kind not in table:
            raise ValueError(f"kind must be 'wall' or 'cpu', got {kind!r}")
        if name not in table[kind]:
            raise KeyError(f"no candidate {name!r}; have {sorted(table[kind])}")
        return np.asarray(table[kind][name], dtype=float)

    def time(self, name: str, kind: str = "wall") -> Estimate:
        """Median time of ``name`` with a bootstrap interval (over repeats)."""
        e = bootstrap_ci(self._times(name, kind), self.level, statistic=np.median, method="percentile")
        return Estimate(e.value, e.lower, e.upper, e.n, e.level, "bootstrap-median", samples=e.samples)

    def speedup(self, name: str, *, over: str, kind: str = "wall") -> Estimate:
        """How many times faster ``name`` is than ``over``: median of the paired ratios ``over_r / name_r``.

        Each repeat ran both back to back, so a load burst touches both; the interval is a
        percentile bootstrap of the median over repeats.
        """
        a, b = self._times(over, kind), self._times(name, kind)
        floor = np.finfo(float).tiny
        r = a / np.maximum(b, floor)
        e = bootstrap_ci(r, self.level, statistic=np.median, method="percentile")
        return Estimate(e.value, e.lower, e.upper, e.n, e.level, "bootstrap-median", samples=e.samples)

    def rows(self) -> list[dict]:
        out = []
        for name in self.wall:
            out.append({"candidate": name, "threads": self.threads, "repeats": self.repeats,
                        "wall_median_s": self.median(name, "wall"), "cpu_median_s": self.median(name, "cpu"),
                        "wall_min_s": float(np.min(self.wall[name])), "wall_max_s": float(np.max(self.wall[name]))})
        return out


def compare(candidates: Mapping[str, Callable[[], object]], *, repeats: int = 15, warmup: int = 1,
            threads: int | str | None = 1, level: float = 0.95, sync: Callable[[], None] | None = None) -> BenchResult:
    """Time zero-argument callables against each other, interleaved.

    Args:
        candidates: name → callable; every one is called ``warmup + repeats`` times.
        repeats: timed rounds (≥ 3); each round calls every candidate once, the order
            alternating between rounds (A B, B A, ...) so no candidate always goes first.
        warmup: untimed rounds first (compilation, caches).
        threads: torch/BLAS threads for all candidates (``None`` leaves them; ``"auto"``: all cores).
        sync: called after each call before the clock stops (e.g. ``torch.cuda.synchronize``).

    Returns:
        A :class:`BenchResult` (wall time by ``time.perf_counter``, CPU time of the process by
        ``time.process_time``).
    """
    if not isinstance(candidates, Mapping) or len(candidates) < 1:
        raise ValueError("candidates must be a non-empty mapping name -> callable")
    for k, f in candidates.items():
        if not callable(f):
            raise TypeError(f"candidate {k!r} is not callable")
    for name, v, lo in (("repeats", repeats, 3), ("warmup", warmup, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    names = list(candidates)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    with pinned_threads(threads) as n_threads:
        for _ in range(warmup):
            for n in names:
                candidates[n]()
                if sync:
                    sync()
        for r in range(repeats):
            order = names if r % 2 == 0 else names[::-1]
            for n in order:
                c0, t0 = time.process_time(), time.perf_counter()
                candidates[n]()
                if sync:
                    sync()
                wall[n].append(time.perf_counter() - t0)
                cpu[n].append(time.process_time() - c0)
    return BenchResult(wall, cpu, n_threads, repeats, warmup, level)


# peak memory --------------------------------------------------------------------------------------

def _status_kb(key: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _timed(fn, args, kwargs, sync=None) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn(*args, **kwargs)
    if sync is not None:
        sync()
    return time.perf_counter() - t0, time.process_time() - c0


def _memory_child(conn, fn, args, kwargs, setup, device) -> None:
    try:
        if setup is not None:
            args = tuple(setup()) + tuple(args)
        if device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.max_memory_allocated()
            wall, cpu = _timed(fn, args, kwargs, torch.cuda.synchronize)
            conn.send(("ok", float(torch.cuda.max_memory_allocated() - base), "cuda-allocator-peak", wall, cpu))
            return
        method = "vmhwm"
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset the peak resident set (Linux >= 4.0)
        except OSError:
            method = None
        rss0 = _status_kb("VmRSS")
        if method is None or rss0 is None:
            import tracemalloc

            tracemalloc.start()
            wall, cpu = _timed(fn, args, kwargs)
            conn.send(("ok", float(tracemalloc.get_traced_memory()[1]), "tracemalloc", wall, cpu))
            return
        wall, cpu = _timed(fn, args, kwargs)
        hwm = _status_kb("VmHWM") or rss0
        conn.send(("ok", max(hwm - rss0, 0.0) * 1024.0, method, wall, cpu))
    except BaseException as e:  # report every failure to the parent
        conn.send(("failed", f"{type(e).__name__}: {e}", "", float("nan"), float("nan")))
    finally:
        conn.close()


@dataclass(frozen=True)
class Memory:
    """Peak memory of one call: ``bytes`` above the process's state after set-up, and how measured;
    ``wall_s``/``cpu_s``: the same call's wall and CPU time in the child (after set-up)."""

    bytes: float
    method: str
    wall_s: float = float("nan")
    cpu_s: float = float("nan")

    @property
    def mib(self) -> float:
        return self.bytes / 2**20


def peak_memory(fn: Callable, *args, setup: Callable[[], tuple] | None = None, device: str = "cpu",
                timeout: float = 600.0, **kwargs) -> Memory:
    """Peak memory of ``fn(*setup(), *args, **kwargs)`` in a fresh (spawned) process.

    ``setup`` (optional, picklable) builds the inputs inside the child before the counter is
    reset, so their memory is not charged to ``fn``. CPU: the rise of the peak resident set
    (``VmHWM``, reset through ``/proc/self/clear_refs``), which counts native allocations
    (BLAS, HiGHS, torch) that ``tracemalloc`` would miss; where ``/proc`` lacks it, tracemalloc's
    peak (``Memory.method`` says which). CUDA: ``torch.cuda.max_memory_allocated`` rise. The call is
    timed in the same child (``Memory.wall_s``, ``Memory.cpu_s``), so one fresh process gives both.
    ``fn``, ``setup`` and the arguments must be picklable (module-level functions).
    """
    if not callable(fn):
        raise TypeError("fn must be callable")
    if not isinstance(device, str) or device.split(":")[0] not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_memory_child, args=(child, fn, args, kwargs, setup, device), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"peak_memory: the call did not finish within {timeout} s")
        status, value, method, wall, cpu = parent.recv()
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
    if status != "ok":
        raise RuntimeError(f"peak_memory: the call failed in the child process: {value}")
    if not math.isfinite(value):
        raise RuntimeError("peak_memory: no measurement")
    return Memory(float(value), method, float(wall), float(cpu))
