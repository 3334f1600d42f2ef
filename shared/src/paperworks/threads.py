"""One place that sets how many threads the numerical libraries use.

``set_threads(n)`` pins torch (intra-op), every BLAS/OpenMP pool threadpoolctl finds
(NumPy, SciPy, scikit-learn) and, when JAX has not started yet, XLA's CPU backend; it also
exports ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` for child processes.
The Hydra glue calls it once per run from the ``threads: auto|N`` key.
"""

from __future__ import annotations

import os
import sys

_LIMITS = []  # keep threadpoolctl's limiter alive for the life of the process


def resolve_threads(spec) -> int:
    """``"auto"`` → the cores this process may use; an int ≥ 1 as it is."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "auto"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover (macOS)
            return max(1, os.cpu_count() or 1)
    if isinstance(spec, bool) or not isinstance(spec, int):
        raise TypeError(f"threads must be 'auto' or a positive int, got {spec!r}")
    if spec < 1:
        raise ValueError(f"threads must be >= 1, got {spec}")
    return spec


def set_threads(spec="auto") -> int:
    """Pin torch, BLAS/OpenMP and XLA to ``spec`` threads; returns the number used."""
    n = resolve_threads(spec)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    if n == 1 and not _xla_started():
        # only real XLA flags: a token without "--" (e.g. TensorFlow's intra_op_parallelism_threads=1)
        # makes XLA ignore every flag after it (measured: consensusgame's fast-compile flags were lost)
        flags = os.environ.get("XLA_FLAGS", "")
        if "--xla_cpu_multi_thread_eigen" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    try:
        from threadpoolctl import threadpool_limits

        _LIMITS[:] = [threadpool_limits(limits=n)]
    except ImportError:  # pragma: no cover
        pass
    # torch reads OMP_NUM_THREADS when it is first imported; pin it here only if it is already
    # loaded, so numpy-only packages do not pay torch's import
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    return n


def _xla_started() -> bool:
    """Whether JAX has initialised an XLA backend (XLA reads ``XLA_FLAGS`` then, not at ``import jax``)."""
    if "jax" not in sys.modules:
        return False
    bridge = sys.modules.get("jax._src.xla_bridge")
    return bool(getattr(bridge, "_backends", None)) if bridge is not None else True
