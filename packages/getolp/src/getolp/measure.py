"""Solver calls with a hard timeout, and the units whose time and peak memory the benchmarks measure.

:func:`measure` runs one call in a forked child that is killed past its timeout, and reports its
result, wall and CPU time and status; a timeout is reported, never hidden. :func:`fresh_process_runs`
compares GETO-LP and the full LP: each call in a fresh process that measures its wall and CPU time
and its peak memory together (one full-LP solve gives both, which matters when it takes minutes),
the candidates alternating, the times collected in a :class:`paperworks.bench.BenchResult` for its
paired ratio and interval. :func:`peak_mib` wraps :func:`paperworks.bench.peak_memory` for the
cost curve. Where ``fork`` is unavailable :func:`measure` runs in-process, without a timeout.
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

def solve_geto(h, shape, w, solver: str = "highs", time_limit=None, highs_options=None):
    """GETO-LP: ν, and the plans recovered (then dropped, so they are not sent through a pipe)."""
    from getolp.barycenter import fixed_support_barycenter

    nu, info = fixed_support_barycenter(h, shape, w, solver=solver, log=True, time_limit=time_limit,
                                        highs_options=highs_options)
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


def peak_mib(kind: str, h, shape, w, solver: str = "highs", *, options=None, timeout_s: float = 600.0) -> float:
    """Peak memory (MiB) of one :func:`solve_geto` (``kind="geto"``) or :func:`solve_full` call.

    Measured by :func:`paperworks.bench.peak_memory` in a fresh process: the rise of its peak
    resident set (HiGHS's C++ memory included) above the state after the imports and inputs.
    Raises ``TimeoutError`` past ``timeout_s`` (no partial peak is reported).
    """
    from paperworks.bench import peak_memory

    fns = {"geto": solve_geto, "full": solve_full}
    if kind not in fns:
        raise ValueError(f"kind must be 'geto' or 'full', got {kind!r}")
    kwargs = {"highs_options": options} if kind == "geto" and options else {}
    with _pot_without_torch():
        return peak_memory(fns[kind], h, tuple(shape), w, solver, setup=_imports, timeout=timeout_s, **kwargs).mib


# time and peak memory of one call in a fresh process ----------------------------------------

def _status_kib(key: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _fresh_child(conn, kind, h, shape, w, kwargs) -> None:
    """In a spawned process: imports first, then reset the peak RSS, time one call, report all three."""
    _die_with_parent()
    try:
        fn = {"geto": solve_geto, "full": solve_full}[kind]
        _imports()
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset the peak resident set (Linux >= 4.0), as paperworks.bench.peak_memory
            rss0 = _status_kib("VmRSS")
        except OSError:
            rss0 = None
        conn.send(("ready",))
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn(h, shape, w, **kwargs)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        hwm = _status_kib("VmHWM")
        peak = (max(hwm - rss0, 0.0) / 1024.0) if rss0 is not None and hwm is not None else None
        conn.send(("ok", out, wall, cpu, peak))
    except BaseException as e:  # report every failure to the parent
        conn.send(("failed", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def fresh_call(kind: str, h, shape, w, kwargs: dict, timeout_s: float) -> dict:
    """One :func:`solve_geto` (``kind="geto"``) or :func:`solve_full` call in a fresh (spawned) process.

    Returns ``{"status", "wall_s", "cpu_s", "peak_mib", "value", "error"}``: wall and CPU time of the
    call and the rise of the process's peak resident set (``VmHWM``, reset after the imports, so
    HiGHS's C++ memory counts and the interpreter's does not). ``status="timeout"`` past ``timeout_s``.
    """
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    with _pot_without_torch():
        proc = ctx.Process(target=_fresh_child, args=(child, kind, h, tuple(shape), w, dict(kwargs)), daemon=True)
        proc.start()
    child.close()
    out = {"status": "failed", "wall_s": None, "cpu_s": None, "peak_mib": None, "value": None, "error": ""}
    try:
        if not parent.poll(300):
            out["error"] = "the measuring process did not start"
            return out
        msg = parent.recv()
        if msg[0] != "ready":
            out["error"] = msg[1]
            return out
        t0 = time.perf_counter()
        if not parent.poll(timeout_s):
            out.update(status="timeout", wall_s=time.perf_counter() - t0, error=f"killed after {timeout_s:g} s")
            return out
        try:
            msg = parent.recv()
        except EOFError:
            out["error"] = "the process died (out of memory?)"
            return out
        if msg[0] == "ok":
            out.update(status="ok", value=msg[1], wall_s=msg[2], cpu_s=msg[3], peak_mib=msg[4])
        else:
            out["error"] = msg[1]
        return out
    finally:
        _reap(proc, parent)


def _reap(proc, conn) -> None:
    """Join a measuring child (killing it if it outlives a grace period) and close its pipe."""
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    conn.close()


def fresh_process_runs(candidates: dict, h, shape, w, *, repeats: int, timeout_s: dict) -> dict:
    """``repeats`` rounds; each round calls every candidate once, each call in a fresh process
    (:func:`fresh_call`), the order alternating between rounds (A B, B A, ...).

    ``candidates``: name → (kind, kwargs). A candidate that fails or times out is not called again.
    Returns per-candidate lists ``wall``, ``cpu``, ``peak_mb``, the last ``values``, ``ok`` (every
    round finished), ``errors``, ``calls`` (one row per call) and ``bench``, a
    :class:`paperworks.bench.BenchResult` of the candidates that finished every round (its ``speedup``
    gives the paired ratio with a bootstrap interval), or ``None`` when none did.
    """
    from paperworks.bench import BenchResult

    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    names = list(candidates)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    peak = {n: [] for n in names}
    values, ok, errors, calls = {}, dict.fromkeys(names, True), {}, []
    for r in range(repeats):
        for n in (names if r % 2 == 0 else names[::-1]):
            if not ok[n]:
                continue
            kind, kwargs = candidates[n]
            res = fresh_call(kind, h, shape, w, kwargs, timeout_s[n])
            calls.append({"candidate": n, "round": r, **{k: v for k, v in res.items() if k != "value"}})
            if res["status"] != "ok":
                ok[n] = False
                errors[n] = f"round {r}: {res['status']} {res['error']}"
                continue
            wall[n].append(res["wall_s"])
            cpu[n].append(res["cpu_s"])
            if res["peak_mib"] is not None:
                peak[n].append(res["peak_mib"])
            values[n] = res["value"]
    done = [n for n in names if ok[n]]  # the candidates that finished every round
    k = min((len(wall[n]) for n in done), default=0)
    bench = (BenchResult({n: wall[n][:k] for n in done}, {n: cpu[n][:k] for n in done}, threads=1, repeats=k,
                         warmup=0) if k >= 1 else None)
    return {"wall": wall, "cpu": cpu, "peak_mb": peak, "values": values, "ok": ok, "errors": errors,
            "calls": calls, "bench": bench}


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
        _reap(proc, parent)
