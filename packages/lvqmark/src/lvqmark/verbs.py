"""``lvqmark detect model=FILE data.path=CSV``: score a user's series with a saved LVQMark (no training data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from lvqmark.data import load_csv, windows
from lvqmark.lvqmark import LVQMark
from paperworks import Claim


def run_detect(cfg, out_dir: Path | None = None) -> dict:
    if cfg.get("model") is None or cfg.get("data") is None or cfg.data.get("path") is None:
        raise ValueError("lvqmark detect needs model=FILE (saved by LVQMark.save or a run) and data.path=CSV")
    mark = LVQMark.load(str(cfg.model))
    series, report = load_csv(cfg.data.path, columns=list(cfg.data.columns) if cfg.data.get("columns") else None)
    if series.shape[1] != mark.vae.n_channels:
        raise ValueError(f"{cfg.data.path} has {series.shape[1]} numeric columns but the model expects "
                         f"{mark.vae.n_channels} channels")
    x = windows(series, mark.vae.window, int(cfg.data.stride))
    if mark.norm is not None:
        x = (x - mark.norm["mean"]) / mark.norm["std"]
    out = mark.detect(torch.tensor(x, dtype=torch.float32))
    z = out["z"].numpy()
    rows = [{"window": i, "start_row": i * int(cfg.data.stride), "z": float(v), "p_value": float(p),
             "detected": bool(v > mark.threshold) if mark.threshold is not None else None}
            for i, (v, p) in enumerate(zip(z, out["p_value"].numpy(), strict=True))]
    chk = Claim.check("every_window_scored", "Every window of the file was scored.", "windows scored",
                      float(len(rows)), target=float(len(x)), tol=0.0)
    return {"claims": [], "checks": [chk], "metrics": rows,
            "extra": {"model": str(cfg.model), "n_windows": len(rows), "n_skipped_rows": report["n_skipped"],
                      "skipped_lines": report["skipped_lines"][:100], "threshold": mark.threshold,
                      "mean_z": float(np.mean(z)), "detected_fraction":
                      float(np.mean([r["detected"] for r in rows])) if mark.threshold is not None else None}}
