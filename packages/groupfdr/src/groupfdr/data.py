"""Simulators (VAR lag blocks, nonlinear multi-series targets) and a loader for users' X, y, groups."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np

from paperworks import check_float, check_int

log = logging.getLogger(__name__)


def _var_series(n_steps: int, n_series: int, rho: float, coupling: float, rng) -> np.ndarray:
    """A stationary VAR(1) with unit marginal variance: x_t = A x_{t−1} + u_t, A = ρI + coupling·(ring)."""
    from statsmodels.tsa.vector_ar.var_model import VARProcess

    A = rho * np.eye(n_series)
    if coupling and n_series > 1:
        A += coupling * np.roll(np.eye(n_series), 1, axis=1)
    if np.max(np.abs(np.linalg.eigvals(A))) >= 1:
        raise ValueError(f"rho={rho}, coupling={coupling} give a non-stationary VAR")
    proc = VARProcess(A[None], None, np.eye(n_series))
    burn = 200
    x = proc.simulate_var(n_steps + burn, None, rng)[burn:]
    return (x - x.mean(0)) / x.std(0)


def lag_blocks(series: np.ndarray, lags: int) -> np.ndarray:
    """(T, S) series → (T − lags, lags, S): row t holds x_{t−1}, …, x_{t−lags} of every series."""
    T = series.shape[0]
    return np.stack([series[lags - k - 1:T - k - 1] for k in range(lags)], axis=1)


def simulate_var_groups(n: int, n_groups: int, lags: int, n_active: int, rho: float, random_state=None, *,
                        signal: float = 0.15, coupling: float = 0.0, noise: float = 1.0):
    """Grouped linear data whose groups are the lag blocks of a VAR(1).

    Each of ``n_groups`` series follows x_t = ρ x_{t−1} + u_t (unit marginal variance; ``coupling``
    adds x_{s+1,t−1}), so the lags inside a block are correlated (corr ρ^|k|). Column block g holds
    series g's lags 1..``lags``; ``n_active`` groups (chosen at random) enter
    y = Σ_{g active} s_g·signal·(sum of the block) + noise·ε with one random sign s_g per group, so a
    group's lags carry correlated signal.

    Returns:
        X (n, n_groups·lags), y (n,), groups (length-p labels 0..G−1), active (sorted labels).
    """
    n, G, L = check_int(n, "n", minimum=3), check_int(n_groups, "n_groups"), check_int(lags, "lags")
    k = check_int(n_active, "n_active", minimum=0, maximum=G)
    rho = check_float(rho, "rho", minimum=-1, maximum=1, open_minimum=True, open_maximum=True)
    signal, noise = check_float(signal, "signal"), check_float(noise, "noise", minimum=0)
    rng = np.random.default_rng(random_state)
    blocks = lag_blocks(_var_series(n + L, G, rho, float(coupling), rng), L)  # (n, L, G)
    X = blocks.transpose(0, 2, 1).reshape(n, G * L)  # column g·L + l = series g, lag l+1
    groups = np.repeat(np.arange(G), L)
    active = np.sort(rng.choice(G, size=k, replace=False))
    beta = np.zeros(G * L)
    for g in active:
        beta[g * L:(g + 1) * L] = rng.choice([-1.0, 1.0]) * signal
    y = X @ beta + noise * rng.standard_normal(n)
    return X, y, groups, active


def simulate_sequences(n: int, n_series: int = 20, lags: int = 5, n_active: int = 3, rho: float = 0.5,
                       random_state=None, *, noise: float = 0.3):
    """Sequences for a recurrent model: X (n, lags, n_series) from a VAR(1); y nonlinear in 3 series.

    y = Σ_{s active} tanh(w_sᵀ x_s) + 0.5·(x_{a,1}·x_{b,1}) + noise·ε, with w_s random unit vectors over
    the lags and (a, b) the first two active series (an interaction).

    Returns:
        X (n, lags, S), y (n,), groups (length-S channel labels 0..S−1), active (sorted).
    """
    n, S, L = check_int(n, "n", minimum=3), check_int(n_series, "n_series"), check_int(lags, "lags")
    k = check_int(n_active, "n_active", minimum=0, maximum=S)
    rng = np.random.default_rng(random_state)
    X = lag_blocks(_var_series(n + L, S, check_float(rho, "rho", minimum=-1, maximum=1, open_minimum=True,
                                                        open_maximum=True), 0.0, rng), L)
    active = np.sort(rng.choice(S, size=k, replace=False))
    y = noise * rng.standard_normal(n)
    for s in active:
        w = rng.standard_normal(L)
        y += 1.5 * np.tanh(X[:, :, s] @ (w / np.linalg.norm(w)))
    if k >= 2:
        y += 0.5 * X[:, 0, active[0]] * X[:, 0, active[1]]
    return X, y, np.arange(S), active


def load_xy(path, *, target: str | int = -1, groups_path=None, groups: str | None = None):
    """A user's data: ``.npz`` (arrays X, y and optionally groups), ``.npy`` (X with y as the
    ``target`` column) or ``.csv`` (header row; ``target`` names the y column).

    Groups come from ``groups_path`` (a ``.npy``/``.csv``/``.txt`` of one label per feature), from the
    ``groups`` array inside an ``.npz``, or, for a CSV, from ``groups="prefix"``: each column named
    ``<series>_lag<k>`` / ``<series>.<k>`` is grouped by the part before the separator. CSV rows with a
    missing or non-numeric value are skipped and counted (with their line numbers in the log).

    Returns:
        X (n, p), y (n,), groups (length p), info (dict: columns, skipped rows).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data.path {path} does not exist")
    info: dict = {"skipped_rows": [], "columns": None}
    g = None
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            if "X" not in f or "y" not in f:
                raise ValueError(f"{path}: an .npz needs arrays 'X' and 'y', has {sorted(f.files)}")
            X, y = np.asarray(f["X"], float), np.asarray(f["y"], float)
            g = f["groups"] if "groups" in f else None
    elif path.suffix == ".npy":
        A = np.load(path, allow_pickle=False).astype(float)
        if A.ndim != 2:
            raise ValueError(f"{path}: a .npy must be a 2-D array (rows × columns), got shape {A.shape}")
        t = int(target)
        y, X = A[:, t], np.delete(A, t, axis=1)
    elif path.suffix in (".csv", ".txt"):
        X, y, cols, skipped = _read_csv(path, target)
        info["columns"], info["skipped_rows"] = cols, skipped
        if groups == "prefix":
            g = np.asarray([_prefix(c) for c in cols])
    else:
        raise ValueError(f"data.path must be .csv, .npy or .npz, got {path.suffix!r}")
    if groups_path is not None:
        gp = Path(groups_path)
        g = (np.load(gp, allow_pickle=False) if gp.suffix == ".npy"
             else np.asarray([s.strip() for s in gp.read_text().replace(",", "\n").split() if s.strip()]))
    if g is None:
        raise ValueError("no groups given: pass data.groups_path=..., an .npz with 'groups', or data.groups=prefix "
                         "for CSV columns named <series>_lag<k>")
    g = np.asarray(g)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, p) and y (n,), got {X.shape} and {y.shape}")
    if g.shape != (X.shape[1],):
        raise ValueError(f"groups must have one label per feature ({X.shape[1]}), got {g.shape[0]}")
    bad = ~(np.isfinite(X).all(1) & np.isfinite(y))
    if bad.any():
        raise ValueError(f"{path}: {int(bad.sum())} rows hold NaN or inf (first at row {int(np.flatnonzero(bad)[0])})")
    return X, y, g, info


def _prefix(col: str) -> str:
    for sep in ("_lag", ".", "_"):
        if sep in col:
            return col.rsplit(sep, 1)[0]
    return col


def _read_csv(path: Path, target):
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header:
            raise ValueError(f"{path} is empty")
        header = [h.strip() for h in header]
        if isinstance(target, str) and not target.lstrip("-").isdigit():
            if target not in header:
                raise ValueError(f"{path}: target column {target!r} not in header {header}")
            t = header.index(target)
        else:
            t = int(target) % len(header)
        rows, skipped = [], []
        for line_no, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            try:
                vals = [float(c) for c in row]
                if len(vals) != len(header) or not all(np.isfinite(vals)):
                    raise ValueError
            except ValueError:
                skipped.append(line_no)
                continue
            rows.append(vals)
    if skipped:
        log.warning("%s: skipped %d bad rows (lines %s)", path, len(skipped), skipped[:20])
    if not rows:
        raise ValueError(f"{path}: no valid data rows")
    A = np.asarray(rows)
    cols = [h for i, h in enumerate(header) if i != t]
    return np.delete(A, t, axis=1), A[:, t], cols, skipped
