"""``entropyshap explain model.path=MLP.pt data.path=BACKGROUND``: explain a saved :class:`GaussianMLP`
on your own rows, without its training data.

Rows come from ``.npy`` (2-D) or ``.csv`` (numbers, an optional header line); CSV rows that do not parse,
hold NaN/inf or have the wrong width are skipped and counted with their line numbers. Writes
``attributions.csv`` (one row per explained point and feature: joint, tc, and the marginal and ordered
values per output) and ``results.json`` (the chain-rule residual as a check).
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np

from entropyshap.explainer import EntropyExplainer, decompose
from entropyshap.models import GaussianMLP
from paperworks import Claim
from paperworks.results import write_metrics_csv

log = logging.getLogger(__name__)


def load_rows(path, width: int | None = None) -> tuple[np.ndarray, list[int]]:
    """Numeric rows ``(n, p)`` from ``.npy`` or ``.csv``, and the 1-based line numbers of skipped CSV rows."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    if path.suffix == ".npy":
        a = np.load(path, allow_pickle=False)
        if a.ndim != 2 or a.dtype.kind not in "fiu":
            raise ValueError(f"{path}: expected a 2-D numeric array, got shape {a.shape} dtype {a.dtype}")
        ok = np.all(np.isfinite(a), axis=1)
        return a[ok].astype(float), [int(i) + 1 for i in np.flatnonzero(~ok)]
    if path.suffix != ".csv":
        raise ValueError(f"{path}: expected a .npy or .csv file")
    rows, skipped = [], []
    with path.open(newline="", encoding="utf-8") as f:
        for line, rec in enumerate(csv.reader(f), start=1):
            if not rec:
                continue
            try:
                vals = [float(v) for v in rec]
            except ValueError:
                if line == 1:
                    continue  # a header
                skipped.append(line)
                continue
            if width is None:
                width = len(vals)
            if len(vals) != width or not np.all(np.isfinite(vals)):
                skipped.append(line)
                continue
            rows.append(vals)
    if not rows:
        raise ValueError(f"{path}: no valid numeric rows (skipped lines {skipped[:10]})")
    if skipped:
        log.warning("%s: skipped %d bad row(s), lines %s", path, len(skipped), skipped[:20])
    return np.asarray(rows, dtype=float), skipped


def run_explain(cfg, out_dir: Path | None = None) -> dict:
    if cfg.model.path is None or cfg.data.path is None:
        raise ValueError("entropyshap explain needs model.path=FILE.pt (a saved GaussianMLP) and data.path=FILE")
    model = GaussianMLP.load(cfg.model.path)
    bg, skipped = load_rows(cfg.data.path, model.n_features)
    if bg.shape[1] != model.n_features:
        raise ValueError(f"data.path has {bg.shape[1]} columns but the model takes {model.n_features}")
    pts, skipped_pts = (bg[: int(cfg.data.n_points)], []) if cfg.data.points is None else load_rows(
        cfg.data.points, model.n_features)
    ex = EntropyExplainer(model, bg, estimator="mc", removal=str(cfg.removal), n_components=int(cfg.n_components),
                          n_mc=int(cfg.n_mc), seed=int(cfg.seed))
    dec = decompose(ex, pts)
    rows = []
    for i in range(len(pts)):
        for j in range(ex.p):
            r = {"point": i, "feature": f"x{j + 1}", "joint": dec["joint"][i, j], "tc": dec["tc"][i, j]}
            r.update({f"marginal_Y{k + 1}": dec["marginal"][i, j, k] for k in range(ex.d)})
            r.update({f"ordered_Y{k + 1}": dec["ordered"][i, j, k] for k in range(ex.d)})
            rows.append(r)
    if out_dir is not None:
        write_metrics_csv(Path(out_dir) / "attributions.csv", rows)
    check = Claim.check("chain_rule", "φ_joint = Σ_j φ_marg,j − φ_TC on these points.", "max |residual|",
                        float(np.max(np.abs(dec["residual"]))), threshold=1e-8, better="lower")
    return {"claims": [], "checks": [check], "metrics": rows,
            "extra": {"n_background": int(len(bg)), "skipped_rows": skipped, "skipped_point_rows": skipped_pts,
                      "global": {"joint": dec["joint"].mean(0).tolist(), "tc": dec["tc"].mean(0).tolist()}}}
