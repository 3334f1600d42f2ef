"""``groupfdr select data.path=...``: block GM on a user's X, y and groups.

Writes ``selection.csv`` (one row per group: label, size, M_g, selected), ``selector.json`` (the fitted
selector, reloadable with :meth:`BlockGaussianMirror.load` and usable without the data) and
``results.json`` (rows read and skipped, the threshold, the selected groups).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from groupfdr.data import load_xy
from groupfdr.mirror import BlockGaussianMirror
from paperworks import Claim
from paperworks.results import write_metrics_csv

log = logging.getLogger(__name__)


def run_select(cfg, out_dir: Path | None = None) -> dict:
    d = cfg.data
    if d.path is None:
        raise ValueError("groupfdr select needs data.path=FILE (.csv, .npy or .npz)")
    X, y, groups, info = load_xy(d.path, target=d.target, groups_path=d.groups_path, groups=d.groups)
    sel = BlockGaussianMirror(groups, q=float(cfg.q), estimator=str(cfg.estimator), offset=int(cfg.offset),
                              norm=str(cfg.norm), random_state=int(cfg.seed)).fit(X, y)
    rows = [{"group": str(g), "size": int(len(ix)), "M": float(m), "selected": bool(m >= sel.threshold_)}
            for g, ix, m in zip(sel.groups_, sel.group_indices_, sel.mirror_statistics_)]
    log.info("n=%d p=%d groups=%d threshold=%s selected=%s (skipped rows: %d)", X.shape[0], X.shape[1],
             len(rows), sel.threshold_, sel.selected_groups_, len(info["skipped_rows"]))
    if out_dir is not None:
        write_metrics_csv(Path(out_dir) / "selection.csv", rows)
        sel.save(Path(out_dir) / "selector.json")
    M, tau, off = sel.mirror_statistics_, sel.threshold_, int(cfg.offset)
    fdp_hat = 0.0 if np.isinf(tau) else float((off + np.sum(M <= -tau)) / max(np.sum(M >= tau), 1))
    check = Claim.check("estimated_fdp_at_threshold", "The selection's estimated FDP is at most q (the threshold rule).",
                        "(offset + #{M ≤ −τ}) / #{M ≥ τ}", fdp_hat, threshold=float(cfg.q), better="lower")
    return {"claims": [], "checks": [check], "metrics": rows,
            "extra": {"n": int(X.shape[0]), "p": int(X.shape[1]), "threshold": sel.threshold_,
                      "selected_groups": [str(g) for g in sel.selected_groups_],
                      "skipped_rows": info["skipped_rows"], "data_path": str(d.path)}}
