"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style


def _variants(rows):
    return sorted({r["variant"] for r in rows if r.get("exp") == "paper"})


def plot_horizons(rows, horizons, path):
    """Rollout MSE and car IoU against the horizon, mean ± s.d. over seeds, per variant."""
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for v in _variants(rows):
        sel = [r for r in rows if r.get("exp") == "paper" and r["variant"] == v]
        for ax, key in zip(axes, ("mse", "iou"), strict=True):
            vals = np.array([[r[f"{key}@{h}"] for h in horizons] for r in sel])
            ax.errorbar(horizons, vals.mean(0), yerr=vals.std(0), marker="o", capsize=3, label=v)
    axes[0].set_ylabel("rollout MSE")
    axes[1].set_ylabel("car-occupancy IoU")
    for ax in axes:
        ax.set_xlabel("horizon (steps)")
    axes[1].legend(fontsize=8)
    return savefig(fig, path)


def plot_probe_vs_drift(rows, horizon, path):
    """Probe R² against long-horizon drift (rollout MSE at the last horizon), one point per seed."""
    plt = use_style()
    fig, ax = plt.subplots(figsize=(5, 4))
    for v in _variants(rows):
        sel = [r for r in rows if r.get("exp") == "paper" and r["variant"] == v]
        ax.scatter([r[f"mse@{horizon}"] for r in sel], [r["probe_r2"] for r in sel], label=v)
    ax.set_xlabel(f"rollout MSE at step {horizon} (drift)")
    ax.set_ylabel("probe R² (hidden states → object states)")
    ax.legend(fontsize=8)
    return savefig(fig, path)
