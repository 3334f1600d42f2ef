"""Data: the brief's synthetic generator, statsmodels' macrodata windows, and a CSV loader for users' series.

Series are arrays ``(N, T, C)`` (float32), standardised per channel with the training split's statistics.
"""

from __future__ import annotations

import csv
import logging
import math
from pathlib import Path

import numpy as np

from paperworks import check_int

log = logging.getLogger("lvqmark")

__all__ = ["synthetic_series", "macrodata_series", "load_csv", "windows", "standardize"]


def synthetic_series(n, *, window=32, n_channels=5, rng=None) -> np.ndarray:
    """``n`` windows ``(n, window, n_channels)``: mixed sinusoids with random phase and frequency, AR(1)
    noise, cross-channel correlation (a random mixing of shared latent factors) and a regime switch
    (amplitude and trend change at a random time, in half of the windows)."""
    n = check_int(n, "n")
    T = check_int(window, "window", minimum=2)
    C = check_int(n_channels, "n_channels")
    rng = np.random.default_rng(rng)
    t = np.arange(T)[None, :, None]
    k = max(2, C // 2)                                                   # shared latent factors
    freq = rng.uniform(0.02, 0.15, size=(n, 1, k))
    phase = rng.uniform(0, 2 * math.pi, size=(n, 1, k))
    latent = np.sin(2 * math.pi * freq * t + phase) + 0.5 * np.sin(4 * math.pi * freq * t + 2 * phase)
    mix = rng.normal(size=(k, C)) / math.sqrt(k)
    signal = latent @ mix                                                # (n, T, C), correlated channels
    phi = rng.uniform(0.5, 0.9, size=(n, 1, C))
    eps = rng.normal(scale=0.15, size=(n, T, C))
    noise = np.zeros_like(eps)
    noise[:, 0] = eps[:, 0]
    for i in range(1, T):
        noise[:, i] = phi[:, 0] * noise[:, i - 1] + eps[:, i]
    switch = rng.integers(T // 4, 3 * T // 4, size=n)
    on = (rng.random(n) < 0.5)[:, None, None] & (np.arange(T)[None, :, None] >= switch[:, None, None])
    amp = rng.uniform(1.5, 2.5, size=(n, 1, C))
    slope = rng.normal(scale=0.05, size=(n, 1, C))
    x = np.where(on, signal * amp + slope * (t - switch[:, None, None]), signal) + noise
    return x.astype(np.float32)


def windows(series: np.ndarray, window: int, stride: int = 1) -> np.ndarray:
    """Sliding windows ``(N, window, C)`` of a ``(T_total, C)`` series; refuses one shorter than a window."""
    series = np.asarray(series, dtype=np.float32)
    window = check_int(window, "window", minimum=2)
    stride = check_int(stride, "stride")
    if series.ndim != 2:
        raise ValueError(f"series must be (T, C), got shape {series.shape}")
    if series.shape[0] < window:
        raise ValueError(f"the series has {series.shape[0]} time steps, shorter than one window ({window})")
    if not np.isfinite(series).all():
        raise ValueError("series must be finite (found NaN or inf)")
    idx = np.arange(0, series.shape[0] - window + 1, stride)
    return np.stack([series[i:i + window] for i in idx])


def standardize(x: np.ndarray, stats: dict | None = None) -> tuple[np.ndarray, dict]:
    """Per-channel z-scores over all windows and steps (``stats`` from the training split when given)."""
    if stats is None:
        flat = x.reshape(-1, x.shape[-1])
        stats = {"mean": flat.mean(0).astype(np.float32), "std": np.maximum(flat.std(0), 1e-6).astype(np.float32)}
    return ((x - stats["mean"]) / stats["std"]).astype(np.float32), stats


_RATES = {"tbilrate", "unemp", "infl", "realint"}


def macrodata_series() -> np.ndarray:
    """statsmodels' US macrodata (1959Q1–2009Q3, 12 series): log-differences ×100 of the level series,
    the rates (T-bill, unemployment, inflation, real interest) as they are; shape ``(202, 12)``."""
    from statsmodels.datasets import macrodata

    df = macrodata.load_pandas().data
    cols = [c for c in df.columns if c not in ("year", "quarter")]
    out = []
    for c in cols:
        v = df[c].to_numpy(dtype=float)
        out.append(v[1:] if c in _RATES else 100 * np.diff(np.log(v)))
    return np.stack(out, 1).astype(np.float32)


def load_csv(path, *, columns=None) -> tuple[np.ndarray, dict]:
    """A numeric CSV with a header, one time step per row, one channel per column.

    ``columns``: the names to keep (default: every column whose first data row parses as a number).
    Rows with a missing, non-numeric, NaN or infinite value in a kept column are skipped, and counted
    with their line numbers. Returns ``(series (T, C), report)``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no CSV file at {path}")
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"{path} needs a header row and at least one data row")
    header = [h.strip() for h in rows[0]]
    if columns is None:
        first = rows[1]
        columns = [h for h, v in zip(header, first, strict=False) if _is_number(v)]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(f"columns {missing} not in {path}'s header {header}")
    if not columns:
        raise ValueError(f"{path} has no numeric columns")
    idx = [header.index(c) for c in columns]
    data, skipped = [], []
    for lineno, row in enumerate(rows[1:], start=2):
        try:
            vals = [float(row[i]) for i in idx]
        except (ValueError, IndexError):
            skipped.append(lineno)
            continue
        if not all(math.isfinite(v) for v in vals):
            skipped.append(lineno)
            continue
        data.append(vals)
    if skipped:
        log.warning("%s: skipped %d bad rows (lines %s)", path, len(skipped), skipped[:20])
    if not data:
        raise ValueError(f"{path} has no valid rows (skipped lines {skipped[:20]})")
    return np.asarray(data, dtype=np.float32), {"columns": list(columns), "n_rows": len(data),
                                                "n_skipped": len(skipped), "skipped_lines": skipped}


def _is_number(v) -> bool:
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False
