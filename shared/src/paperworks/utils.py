"""Small helpers: the cache directory and a wall-clock timer."""

from __future__ import annotations

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
