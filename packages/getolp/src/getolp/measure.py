"""Wall time and peak memory of one solver call, in a forked child with a hard timeout.

Peak memory is the child's peak resident set (``VmHWM``, reset at the start through
``/proc/self/clear_refs``) minus its resident set at the start: it counts what the call itself
allocated, HiGHS's C++ memory included (``tracemalloc`` would see only Python's). A call past the
timeout is killed and reported as ``timeout`` with the peak reached so far (a lower bound). Where
``fork`` or ``/proc`` is unavailable the call runs in-process, timed, with ``tracemalloc``'s peak
and no timeout (``memory_method`` says which).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import tracemalloc
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Measured:
    status: str  # ok | timeout | failed | skipped
    wall_s: float | None = None
    peak_mb: float | None = None
    value: Any = None
    error: str = ""
    memory_method: str = "rss"

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def row(self, prefix: str) -> dict:
        d = asdict(self)
        d.pop("value")
        return {f"{prefix}_{k}": v for k, v in d.items()}


def _status_kb(pid: int | str, key: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _die_with_parent() -> None:
    """Ask Linux to kill this child when its parent dies (no orphaned solver runs)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(conn, fn, args, kwargs) -> None:
    _die_with_parent()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS
    except OSError:
        pass
    rss0 = _status_kb("self", "VmRSS") or 0.0
    conn.send(("start", rss0))
    try:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        wall = time.perf_counter() - t0
        hwm = _status_kb("self", "VmHWM") or rss0
        conn.send(("ok", out, wall, (hwm - rss0) / 1024.0))
    except BaseException as e:  # report every failure to the parent
        conn.send(("failed", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _inline(fn, args, kwargs) -> Measured:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn(*args, **kwargs)
    except Exception as e:
        return Measured("failed", time.perf_counter() - t0, None, None, f"{type(e).__name__}: {e}", "tracemalloc")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return Measured("ok", time.perf_counter() - t0, peak / 2**20, out, "", "tracemalloc")


def measure(fn, *args, timeout_s: float | None = None, isolate: bool = True, **kwargs) -> Measured:
    """Run ``fn(*args, **kwargs)`` once; its result, wall time, peak memory (MiB) and status.

    ``isolate=False`` runs in-process (``tracemalloc`` peak, no timeout): cheaper, for tiny runs.
    """
    if timeout_s is not None and timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if not isolate or "fork" not in mp.get_all_start_methods() or not os.path.exists("/proc/self/status"):
        return _inline(fn, args, kwargs)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, kwargs), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(30):
            raise RuntimeError("the measuring child did not start")
        _, rss0 = parent.recv()
        t0 = time.perf_counter()
        ready = parent.poll(timeout_s)
        if not ready:
            hwm = _status_kb(proc.pid, "VmHWM")
            proc.kill()
            peak = None if hwm is None else (hwm - rss0) / 1024.0
            return Measured("timeout", time.perf_counter() - t0, peak, None, f"killed after {timeout_s:g} s")
        try:
            msg = parent.recv()
        except EOFError:
            return Measured("failed", time.perf_counter() - t0, None, None, "the child died (out of memory?)")
        if msg[0] == "ok":
            return Measured("ok", msg[2], msg[3], msg[1])
        return Measured("failed", time.perf_counter() - t0, None, None, msg[1])
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        parent.close()
