"""Solver calls with a hard timeout, and the units whose time and peak memory the benchmarks measure.

:func:`measure` runs one call in a forked child that is killed past its timeout (the full LP at
large grids), and reports its result, wall and CPU time and status; a timeout is reported, never
hidden. Peak memory is not measured here but by :func:`paperworks.bench.peak_memory` (a fresh
process per measurement, the inputs and solver imports in place before the counter is reset):
:func:`peak_mib` wraps it for :func:`solve_geto` / :func:`solve_full`. Where ``fork`` is unavailable
the call runs in-process, without a timeout.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Measured:
    status: str  # ok | timeout | failed | skipped
    wall_s: float | None = None
    cpu_s: float | None = None
    value: Any = None
    error: str = ""
    peak_mb: float | None = None  # median of the peak-memory measurements (MiB), when measured
    peak_mb_samples: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def row(self, prefix: str) -> dict:
        d = asdict(self)
        d.pop("value")
        d.pop("peak_mb_samples")
        return {f"{prefix}_{k}": v for k, v in d.items()}


# the measured units --------------------------------------------------------------------------

def solve_geto(h, shape, w, solver: str = "highs", time_limit=None):
    """GETO-LP: ν, and the plans recovered (then dropped, so they are not sent through a pipe)."""
    from getolp.barycenter import fixed_support_barycenter

    nu, info = fixed_support_barycenter(h, shape, w, solver=solver, log=True, time_limit=time_limit)
    info.pop("plans")
    return nu, info


def solve_full(h, shape, w, solver: str = "highs"):
    """The standard LP of POT (``ot.lp.barycenter``, same HiGHS)."""
    from getolp.baselines import full_lp_barycenter

    return full_lp_barycenter(h, shape, w, solver=solver, log=True)


def _imports() -> tuple:
    """Set-up for :func:`peak_mib`: load the solvers' libraries before the memory counter is reset."""
    import getolp.baselines  # noqa: F401  (POT, scipy.optimize)

    return ()


@contextmanager
def _pot_without_torch():
    """POT need not load torch to solve an LP: the measuring processes start faster without it."""
    old = os.environ.get("POT_BACKEND_DISABLE_PYTORCH")
    os.environ["POT_BACKEND_DISABLE_PYTORCH"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("POT_BACKEND_DISABLE_PYTORCH", None)
        else:
            os.environ["POT_BACKEND_DISABLE_PYTORCH"] = old


def peak_mib(kind: str, h, shape, w, solver: str = "highs", *, timeout_s: float = 600.0) -> float:
    """Peak memory (MiB) of one :func:`solve_geto` (``kind="geto"``) or :func:`solve_full` call.

    Measured by :func:`paperworks.bench.peak_memory` in a fresh process: the rise of its peak
    resident set (HiGHS's C++ memory included) above the state after the imports and inputs.
    Raises ``TimeoutError`` past ``timeout_s`` (no partial peak is reported).
    """
    from paperworks.bench import peak_memory

    fns = {"geto": solve_geto, "full": solve_full}
    if kind not in fns:
        raise ValueError(f"kind must be 'geto' or 'full', got {kind!r}")
    with _pot_without_torch():
        return peak_memory(fns[kind], h, tuple(shape), w, solver, setup=_imports, timeout=timeout_s).mib


# a call with a hard timeout --------------------------------------------------------------------

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
    conn.send(("start",))
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn(*args, **kwargs)
        conn.send(("ok", out, time.perf_counter() - t0, time.process_time() - c0))
    except BaseException as e:  # report every failure to the parent
        conn.send(("failed", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _inline(fn, args, kwargs) -> Measured:
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        out = fn(*args, **kwargs)
    except Exception as e:
        return Measured("failed", time.perf_counter() - t0, time.process_time() - c0, None, f"{type(e).__name__}: {e}")
    return Measured("ok", time.perf_counter() - t0, time.process_time() - c0, out)


def measure(fn, *args, timeout_s: float | None = None, isolate: bool = True, **kwargs) -> Measured:
    """Run ``fn(*args, **kwargs)`` once; its result, wall and CPU time (s) and status.

    ``isolate=True`` runs it in a forked child, killed after ``timeout_s`` (status ``timeout``,
    the wall time a lower bound); ``isolate=False`` runs in-process, without a timeout.
    """
    if timeout_s is not None and timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if not isolate or "fork" not in mp.get_all_start_methods():
        return _inline(fn, args, kwargs)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, kwargs), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(30):
            raise RuntimeError("the measuring child did not start")
        parent.recv()
        t0 = time.perf_counter()
        if not parent.poll(timeout_s):
            proc.kill()
            return Measured("timeout", time.perf_counter() - t0, None, None, f"killed after {timeout_s:g} s")
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
