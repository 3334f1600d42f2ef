"""``modellens rank``: the Top-k pool of a saved ModelLens for a dataset, without the training data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from modellens.lens import ModelLens
from paperworks import Claim, atomic_write_text


def run_rank(cfg, out_dir: Path | None = None) -> dict:
    if cfg.model is None or cfg.dataset is None:
        raise ValueError("modellens rank needs model=lens.pt and dataset=NAME")
    lens = ModelLens.load(cfg.model, device=str(cfg.device))
    mm = pd.read_csv(cfg.model_meta) if cfg.model_meta else None
    dm = pd.read_csv(cfg.dataset_meta) if cfg.dataset_meta else None
    if mm is not None or dm is not None:
        lens.add_entities(mm, dm)
    cands = None if cfg.candidates is None else [str(c) for c in cfg.candidates]
    pool = lens.rank(str(cfg.dataset), cands, cfg.metric, k=int(cfg.k))
    scores = lens.predict(pool, str(cfg.dataset), cfg.metric)
    rows = [{"rank": i + 1, "model": m, "score": float(s)} for i, (m, s) in enumerate(zip(pool, scores))]
    if out_dir is not None:
        atomic_write_text(Path(out_dir) / "pool.json", json.dumps({"dataset": str(cfg.dataset), "k": int(cfg.k),
                                                                  "pool": pool}, indent=2))
    check = Claim.check("pool_is_sorted", "The pool is sorted by predicted score (best first).",
                        "out-of-order neighbours", int(sum(a < b for a, b in zip(scores, scores[1:]))), threshold=0,
                        better="lower")
    return {"claims": [], "checks": [check], "metrics": rows, "extra": {"pool": pool, "model": str(cfg.model)}}
