"""``run(cfg) -> dict``: the experiment, pure and callable from tests and notebooks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tmevolve.baselines import sample_median
from tmevolve.data import gaussian_samples
from tmevolve.method import sample_mean
from paperworks import Claim, estimate, seeds_of


def run(cfg, out_dir: Path | None = None) -> dict:
    seeds = seeds_of(cfg)
    rows, mse_mean, mse_median = [], [], []
    # one measurement per seed
    for seed in seeds:
        rng = np.random.default_rng(seed)
        x = gaussian_samples(rng, trials=int(cfg.trials), n=int(cfg.n), loc=float(cfg.loc))
        a = float(np.mean((sample_mean(x) - cfg.loc) ** 2))
        b = float(np.mean((sample_median(x) - cfg.loc) ** 2))
        mse_mean.append(a)
        mse_median.append(b)
        rows.append({"seed": seed, "mse_mean": a, "mse_median": b, "ratio": a / b})
    ratio = estimate([r["ratio"] for r in rows])
    claims = [
        Claim.compare(
            "mean_beats_median", "On Gaussian data the sample mean has a lower MSE than the median.",
            "MSE of the location estimate", mse_mean, baseline="median",
            baselines={"median": mse_median}, better="lower", paired=True,  # same seeds, same data
        ),
        Claim.threshold(
            "efficiency_ratio", "MSE(mean)/MSE(median) is below 0.8 (theory: 2/π ≈ 0.64 for large n).",
            "MSE ratio", ratio, threshold=0.8, better="lower",
        ),
    ]

    def plots(out_dir):  # called by the glue after results.json is written; skipped without matplotlib
        from tmevolve.plot import plot_mse

        plot_mse(rows, Path(out_dir) / "mse.png")

    return {"claims": claims, "metrics": rows, "seeds": seeds, "plots": plots}
