"""Users' sample sets: ``.npy``/``.npz`` arrays or CSV/whitespace text files, one sample per row."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def load_samples(path) -> tuple[np.ndarray, dict]:
    """An (M, d) float array from ``path`` and ``{"rows", "skipped", "bad_lines"}``.

    Text files (``.csv``, ``.txt``, ``.tsv``): comma, tab or whitespace separated numbers; a header line, blank
    and ``#`` lines are ignored; rows with a non-number, a non-finite value or the wrong number of columns are
    skipped and counted with their line numbers (logged). ``.npy``: a 2-D numeric array; ``.npz``: key ``x``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path: no file at {path}")
    if path.suffix in (".npy", ".npz"):
        arr = np.load(path, allow_pickle=False)
        if path.suffix == ".npz":
            if "x" not in arr.files:
                raise ValueError(f"data.path: {path} has no array 'x'")
            arr = arr["x"]
        arr = np.asarray(arr)
        if arr.dtype.kind not in "biuf" or arr.ndim != 2:
            raise ValueError(f"data.path: {path} must hold a numeric (M, d) array, got {arr.dtype} {arr.shape}")
        ok = np.all(np.isfinite(arr), axis=1)
        bad = [int(i) for i in np.flatnonzero(~ok)]
        if bad:
            log.warning("data.path: skipped %d non-finite rows (indices %s)", len(bad), bad[:20])
        arr = arr[ok].astype(float)
        if arr.shape[0] < 2:
            raise ValueError(f"data.path: {path} has fewer than 2 valid rows")
        return arr, {"rows": int(arr.shape[0]), "skipped": len(bad), "bad_lines": bad}
    rows, bad, width = [], [], None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = [p for p in s.replace(",", " ").replace("\t", " ").split(" ") if p]
            try:
                vals = [float(p) for p in parts]
            except ValueError:
                if not rows and not bad and width is None:  # a header line
                    continue
                bad.append(lineno)
                continue
            if not all(np.isfinite(vals)) or (width is not None and len(vals) != width):
                bad.append(lineno)
                continue
            width = len(vals)
            rows.append(vals)
    if bad:
        log.warning("data.path: skipped %d bad rows of %s (lines %s)", len(bad), path, bad[:20])
    if len(rows) < 2:
        raise ValueError(f"data.path: {path} has fewer than 2 valid rows ({len(bad)} skipped)")
    return np.array(rows, dtype=float), {"rows": len(rows), "skipped": len(bad), "bad_lines": bad}


__all__ = ["load_samples"]
