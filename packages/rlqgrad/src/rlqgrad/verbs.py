"""CLI verb ``rlqgrad optimize policy=FILE [data.path=FILE.csv]``: deploy a saved policy on a user's data."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np

from paperworks import Claim, check_float, check_int

log = logging.getLogger(__name__)


def load_csv(path) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Numeric CSV, the last column the label (two distinct values); bad rows skipped, their line numbers kept."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no data file at {path}")
    X, y, bad, width = [], [], [], None
    with path.open(newline="") as f:
        for lineno, row in enumerate(csv.reader(f), start=1):
            if not row or all(not c.strip() for c in row):
                continue
            try:
                vals = [float(c) for c in row]
            except ValueError:
                if lineno == 1:  # a header
                    continue
                bad.append(lineno)
                continue
            if width is None:
                width = len(vals)
            if len(vals) != width or len(vals) < 2 or not np.all(np.isfinite(vals)):
                bad.append(lineno)
                continue
            X.append(vals[:-1])
            y.append(vals[-1])
    if bad:
        log.warning("%s: skipped %d bad row(s), lines %s", path, len(bad), bad[:20])
    labels = np.unique(y)
    if len(y) < 10 or labels.size != 2:
        raise ValueError(f"{path}: need >= 10 good rows and exactly two label values, got {len(y)} rows, "
                         f"labels {labels[:5].tolist()}")
    return np.asarray(X), np.where(np.asarray(y) == labels[1], 1.0, -1.0), bad


def run_optimize(cfg, out_dir: Path | None = None) -> dict:
    from sklearn.model_selection import train_test_split

    from rlqgrad.baselines import train
    from rlqgrad.circuit import HEA
    from rlqgrad.data import embed_features, load_split
    from rlqgrad.policy import UpdatePolicy

    if not cfg.get("policy"):
        raise ValueError("rlqgrad optimize needs policy=FILE (a policy.pt written by any experiment)")
    policy = UpdatePolicy.load(str(cfg.policy))
    n, L = check_int(cfg.n_qubits, "n_qubits"), check_int(cfg.n_layers, "n_layers")
    budget = check_int(cfg.budget, "budget", minimum=1)
    scale = check_float(cfg.scale, "scale", minimum=0.0, open_minimum=True)
    seed = int(cfg.seed)
    bad = []
    if cfg.data.get("path"):
        X, y, bad = load_csv(cfg.data.path)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
        Xtr, (Xte,) = embed_features(Xtr, [Xte], n)
    else:
        sp = load_split(str(cfg.data.name), n, seed=seed)
        Xtr, ytr, Xte, yte = sp.X_train, sp.y_train, sp.X_test, sp.y_test
    hea = HEA(n, L)
    th0 = hea.init_params(np.random.default_rng(seed))
    r = train("rlqgrad", hea, Xtr, ytr, th0, budget=budget, lr=scale, policy=policy, seed=seed,
              eval_sets={"test": (Xte, yte)}, every=max(1, budget // 10))
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        np.save(Path(out_dir) / "theta.npy", r["theta"])
    row = {"evaluations": r["evaluations"], "acc_test": r["acc_test"], "loss_test": r["loss_test"],
           "bad_rows": len(bad)}
    check = Claim.check("budget_respected", "RLQ-Grad spent no more circuit evaluations than the budget.",
                        "evaluations / budget", r["evaluations"] / budget, threshold=1.0, better="lower")
    return {"claims": [], "checks": [check], "metrics": [row],
            "extra": {"bad_rows": bad[:50], "acc_test": r["acc_test"], "evaluations": r["evaluations"]}}
