"""Users' bags: ``tmevolve data.path=DIR data.labels_csv=CSV`` trains and compares on them;
``tmevolve predict model=model.pt data.path=DIR`` scores bags with a saved model (no training data)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch

from paperworks import Claim, seeds_of
from tmevolve.data import load_bags
from tmevolve.evolve import TMEvolve
from tmevolve.train import predict


def _concepts(path, d):
    if not path:
        return None
    p = Path(path)
    c = np.load(p) if p.suffix == ".npy" else torch.load(p, map_location="cpu", weights_only=True)
    return torch.as_tensor(np.asarray(c), dtype=torch.float32)


def run_bags(cfg, out_dir=None) -> dict:
    """Train TMEvolve and the baselines on a user's bags (60/20/20 split per seed)."""
    from tmevolve.run import _kmeans, train_one

    if not cfg.data.get("labels_csv"):
        raise ValueError("data.path needs data.labels_csv (slide_id + label | target | time,event)")
    bags = load_bags(cfg.data.path, cfg.data.labels_csv)
    if len(bags) < 5:
        raise ValueError(f"need at least 5 labelled bags, got {len(bags)} (skipped {len(bags.skipped)})")
    task = str(cfg.data.task)
    seeds = seeds_of(cfg)
    concepts = _concepts(cfg.data.get("concepts"), bags[0].num_features)
    methods = ["tmevolve", *[m for m in cfg.methods if concepts is not None or not m.startswith("concept")]]
    rows, per = [], {}
    for seed in seeds:
        idx = np.random.default_rng(seed).permutation(len(bags))
        a, b = int(0.6 * len(idx)), int(0.8 * len(idx))
        data = {"train": [bags[i] for i in idx[:a]], "val": [bags[i] for i in idx[a:b]],
                "test": [bags[i] for i in idx[b:]]}
        centroids = _kmeans(data["train"], int(cfg.model.num_regions), seed)
        for name in methods:
            model, info = train_one(name, cfg, data, concepts, centroids, task, seed, str(cfg.device))
            per.setdefault(name, []).append(info["test"])
            rows.append({"seed": seed, "method": name, "lr": info["lr"], "test": info["test"]})
            if name == "tmevolve" and out_dir is not None and seed == seeds[0]:
                model.save(Path(out_dir) / "model.pt")
    claims = [Claim.compare_all("bags_beats_baselines", "On the user's bags TMEvolve beats every baseline.",
                                "test metric", per["tmevolve"], baselines={k: v for k, v in per.items() if k != "tmevolve"},
                                better="higher", paired=True, requires={"≥ 3 seeds": len(seeds) >= 3})]
    return {"claims": claims, "metrics": rows, "seeds": seeds,
            "extra": {"skipped": [list(s) for s in bags.skipped], "n_bags": len(bags)}}


def run_predict(cfg, out_dir=None) -> dict:
    """Score bags with a saved TMEvolve; writes predictions.csv."""
    model = TMEvolve.load(cfg.model)
    bags = load_bags(cfg.data.path, cfg.data.get("labels_csv"))
    if not bags:
        raise ValueError(f"no readable bags at {cfg.data.path} (skipped {len(bags.skipped)})")
    out, _ = predict(model, [_strip(b) for b in bags])
    if out_dir is not None:
        with open(Path(out_dir) / "predictions.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["slide_id", *[f"out{i}" for i in range(out.shape[1])]])
            for b, o in zip(bags, out):
                w.writerow([b.name, *o.tolist()])
    return {"claims": [], "checks": [Claim.check("predicted_all", "Every readable bag was scored.", "bags scored",
                                                  float(len(out)), target=float(len(bags)))],
            "extra": {"skipped": [list(s) for s in bags.skipped]}}


def _strip(b):
    b = b.clone()
    if getattr(b, "y", None) is None:
        b.y = torch.zeros(1)
    return b
