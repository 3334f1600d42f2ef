"""Small helpers: the cache directory, a wall-clock timer and argument checks for public APIs."""

from __future__ import annotations

import math
import numbers
import os
import time
from contextlib import contextmanager
from pathlib import Path


def cache_dir(slug: str) -> Path:
    """``~/.cache/paperworks/<slug>`` (``PAPERWORKS_CACHE`` overrides the root), created if missing."""
    if not slug or "/" in slug or slug.startswith("."):
        raise ValueError(f"slug must be a plain package name, got {slug!r}")
    root = Path(os.environ.get("PAPERWORKS_CACHE", Path.home() / ".cache" / "paperworks"))
    path = root / slug
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def timer(store: dict, key: str):
    """Context manager adding the elapsed wall time (seconds) to ``store[key]``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        store[key] = store.get(key, 0.0) + time.perf_counter() - t0


def check_int(value, name: str, *, minimum: int | None = 1, maximum: int | None = None,
              optional: bool = False) -> int | None:
    """``value`` as a Python int, or a clear error naming ``name``.

    Python and NumPy integers pass; bools, floats (even ``4.0``) and strings are refused rather
    than coerced. ``minimum``/``maximum`` are inclusive bounds (``None``: unbounded); with
    ``optional=True`` ``None`` passes through.

    Example:
        >>> check_int(3, "n_states")
        3
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{' or None' if optional else ''}, "
                        f"got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(value, name: str, *, minimum: float | None = None, maximum: float | None = None,
                open_minimum: bool = False, open_maximum: bool = False, optional: bool = False) -> float | None:
    """``value`` as a finite Python float, or a clear error naming ``name``.

    Python/NumPy reals and 0-d arrays pass; bools and strings are refused (no coercion), NaN and
    ±inf always. Bounds are inclusive unless ``open_minimum``/``open_maximum``.

    Example:
        >>> check_float(0.25, "alpha", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
        0.25
    """
    if value is None and optional:
        return None
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number{' or None' if optional else ''}, "
                        f"got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and (value <= minimum if open_minimum else value < minimum):
        raise ValueError(f"{name} must be {'>' if open_minimum else '>='} {minimum}, got {value}")
    if maximum is not None and (value >= maximum if open_maximum else value > maximum):
        raise ValueError(f"{name} must be {'<' if open_maximum else '<='} {maximum}, got {value}")
    return value
