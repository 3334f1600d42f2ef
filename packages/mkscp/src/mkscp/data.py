"""Synthetic multi-output regression with non-elliptical residuals, and the macrodata demo.

The synthetic design extends the official generator's: ``x ~ U(0, 1)``, a smooth nonlinear mean
``f(x)`` in ``R^d``, and residuals that are Gaussian (the control), banana-shaped, a Gaussian
mixture, or heteroscedastic (scale growing and orientation rotating with ``x``).
"""

from __future__ import annotations

import numpy as np

RESIDUALS = ("gaussian", "banana", "mixture", "heteroscedastic")


def mean_function(x, d: int) -> np.ndarray:
    """``f_j(x) = (1 + j/d) sin(2 pi (x + j/d)) + x^2``, shape ``(n, d)``."""
    x = np.asarray(x, dtype=float).reshape(-1, 1)
    j = np.arange(d)[None, :] / d
    return (1 + j) * np.sin(2 * np.pi * (x + j)) + x**2


def _correlated(d: int, rng) -> np.ndarray:
    A = rng.normal(size=(d, d))
    S = A @ A.T / d + 0.5 * np.eye(d)
    s = np.sqrt(np.diag(S))
    return np.linalg.cholesky(S / np.outer(s, s))


def sample_residuals(kind: str, n: int, d: int, rng: np.random.Generator, x=None) -> np.ndarray:
    """``n`` residual vectors in ``R^d`` of the given ``kind`` (see ``RESIDUALS``)."""
    if kind not in RESIDUALS:
        raise ValueError(f"kind must be one of {RESIDUALS}, got {kind!r}")
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be >= 1, got n={n}, d={d}")
    z = rng.normal(size=(n, d))
    if kind == "gaussian":
        return 0.5 * z @ _correlated(d, np.random.default_rng(1234 + d)).T
    if kind == "banana":
        e = 0.35 * z
        e[:, 0] = z[:, 0]
        if d > 1:
            e[:, 1:] += 0.6 * (z[:, :1] ** 2 - 1.0)
        return 0.6 * e
    if kind == "mixture":
        k = rng.integers(0, 3, size=n)
        centres = np.zeros((3, d))
        centres[1, 0], centres[2, min(1, d - 1)] = 1.5, -1.5
        return centres[k] + 0.3 * z
    # scale and orientation both change with x: the marginal is a mixture of differently rotated
    # ellipses (non-elliptical), unlike a pure scale change, whose marginal stays elliptical
    x = rng.uniform(size=n) if x is None else np.asarray(x, dtype=float).ravel()
    e = 0.3 * z
    e[:, 0] = z[:, 0]
    if d > 1:
        c, s = np.cos(np.pi * x), np.sin(np.pi * x)
        e[:, 0], e[:, 1] = c * e[:, 0] - s * e[:, 1], s * e[:, 0] + c * e[:, 1]
    return 0.5 * (0.3 + 0.7 * x)[:, None] * e


def make_regression(kind: str, n: int, d: int, rng: np.random.Generator):
    """``(X, Y)`` with ``X ~ U(0, 1)`` of shape ``(n, 1)`` and ``Y = f(X) + e`` of shape ``(n, d)``."""
    x = rng.uniform(size=n)
    return x[:, None], mean_function(x, d) + sample_residuals(kind, n, d, rng, x=x)


def macrodata_growth(lags: int = 2):
    """The US macro growth demo from ``statsmodels.datasets.macrodata`` (bundled, offline).

    Quarterly annualised log growth (%) of real GDP, consumption and investment; the target is
    next quarter's 3-vector, the features are the previous ``lags`` quarters' vectors.
    Returns ``(X, Y)`` with shapes ``(n, 3 lags)`` and ``(n, 3)``, ``n = 202 - lags``.
    """
    from statsmodels.datasets import macrodata

    df = macrodata.load_pandas().data
    levels = np.log(df[["realgdp", "realcons", "realinv"]].to_numpy(dtype=float))
    g = 400.0 * np.diff(levels, axis=0)
    X = np.hstack([g[lags - k - 1:len(g) - k - 1] for k in range(lags)])
    return X, g[lags:]


# users' data ---------------------------------------------------------------------------------------
def load_table(path, targets=None, features=None, *, x_key: str = "X", y_key: str = "Y"):
    """Features and targets from a user's ``.csv`` or ``.npz`` file.

    - ``.csv``: a header row, then one row per sample; ``targets`` are column names (or 0-based
      indices, at least one), ``features`` the feature columns (default: every other column).
    - ``.npz``: arrays ``x_key`` (shape ``(n, p)``) and ``y_key`` (``(n, d)``); ``targets`` picks
      columns of ``Y`` by index (default: all). Loaded with ``allow_pickle=False``.

    Rows with a missing or non-numeric value, NaN or inf in a used column are skipped and counted.

    Returns:
        ``(X, Y, info)``: float arrays of shapes ``(n, p)`` and ``(n, d)``, and ``info`` with
        ``rows`` (kept), ``skipped``, ``skipped_lines`` (the first 20: csv line numbers, 1 = header;
        npz row indices), ``targets`` and ``features`` (names).
    """
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path: no such file {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        X, Y, info = _load_csv(path, targets, features)
    elif suffix == ".npz":
        X, Y, info = _load_npz(path, targets, x_key, y_key)
    else:
        raise ValueError(f"data.path must end in .csv or .npz, got {path.name!r}")
    if len(Y) < 2:
        raise ValueError(f"{path.name}: only {len(Y)} usable row(s) ({info['skipped']} skipped, first at lines "
                         f"{info['skipped_lines']})")
    return X, Y, info


def _columns(spec, header, what):
    if spec is None:
        return None
    items = [spec] if isinstance(spec, (str, int)) else list(spec)
    out = []
    for c in items:
        if isinstance(c, bool):
            raise TypeError(f"data.{what}: {c!r} is not a column")
        if isinstance(c, int):
            if not 0 <= c < len(header):
                raise ValueError(f"data.{what}: column index {c} out of range (the file has {len(header)} columns)")
            out.append(c)
        elif str(c) in header:
            out.append(header.index(str(c)))
        else:
            raise ValueError(f"data.{what}: no column {c!r}; the columns are {header}")
    if not out:
        raise ValueError(f"data.{what} must name at least one column")
    return out


def _load_csv(path, targets, features):
    import csv

    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        if not header:
            raise ValueError(f"{path.name}: empty file (a header row is required)")
        if targets is None:
            raise ValueError("data.targets is required for a csv file: the target column names, e.g. "
                             "data.targets=[y1,y2]")
        t = _columns(targets, header, "targets")
        fcols = _columns(features, header, "features")
        if fcols is None:
            fcols = [i for i in range(len(header)) if i not in t]
        if not fcols:
            raise ValueError("no feature columns left: name them with data.features")
        if set(fcols) & set(t):
            raise ValueError("a column cannot be both a feature and a target")
        X, Y, bad = [], [], []
        for line, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            try:
                x = [float(row[i]) for i in fcols]
                y = [float(row[i]) for i in t]
            except (ValueError, IndexError):
                bad.append(line)
                continue
            if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
                bad.append(line)
                continue
            X.append(x)
            Y.append(y)
    info = {"rows": len(Y), "skipped": len(bad), "skipped_lines": bad[:20], "targets": [header[i] for i in t],
            "features": [header[i] for i in fcols]}
    return (np.asarray(X, dtype=float).reshape(-1, len(fcols)), np.asarray(Y, dtype=float).reshape(-1, len(t)),
            info)


def _load_npz(path, targets, x_key, y_key):
    with np.load(path, allow_pickle=False) as f:
        for k in (x_key, y_key):
            if k not in f:
                raise ValueError(f"{path.name}: no array {k!r}; it holds {sorted(f.files)} (set data.x_key / data.y_key)")
        X, Y = f[x_key], f[y_key]
    if X.dtype.kind not in "biuf" or Y.dtype.kind not in "biuf":
        raise TypeError(f"{path.name}: {x_key} and {y_key} must be numeric, got {X.dtype} and {Y.dtype}")
    X = X.astype(float).reshape(len(X), -1)
    Y = Y.astype(float).reshape(len(Y), -1)
    if len(X) != len(Y):
        raise ValueError(f"{path.name}: {x_key} has {len(X)} rows but {y_key} has {len(Y)}")
    if targets is not None:
        Y = Y[:, _columns(targets, [str(i) for i in range(Y.shape[1])], "targets")]
    ok = np.all(np.isfinite(X), axis=1) & np.all(np.isfinite(Y), axis=1)
    bad = np.flatnonzero(~ok).tolist()
    info = {"rows": int(ok.sum()), "skipped": len(bad), "skipped_lines": bad[:20],
            "targets": [f"{y_key}[:, {i}]" for i in range(Y.shape[1])], "features": [f"{x_key}[:, {i}]"
                                                                                    for i in range(X.shape[1])]}
    return X[ok], Y[ok], info
