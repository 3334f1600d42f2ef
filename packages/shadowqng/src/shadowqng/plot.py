"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_curves(chosen: dict, path):
    """Relative energy error vs cumulative shots, one panel per (model, n), best lr per method."""
    plt = use_style()
    panels = sorted({(m, n) for m, n, _ in chosen})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (m, n) in zip(axes[0], panels):
        for (mm, nn, lab), (lr, curves) in sorted(chosen.items()):
            if (mm, nn) != (m, n):
                continue
            grid = np.linspace(0, min(c["shots"][-1] for c in curves), 60)
            ys = np.array([c["error"][np.searchsorted(c["shots"], grid, side="right") - 1] for c in curves])
            style = "--" if lab == "exact_qng" else "-"
            ax.plot(grid, ys.mean(axis=0), style, label=f"{lab} (lr {lr:g})")
        ax.set_yscale("log")
        ax.set_title(f"{m.upper()}, n={n}")
        ax.set_xlabel("cumulative shots")
        ax.set_ylabel("relative energy error")
    axes[0][-1].legend(fontsize=7)
    return savefig(fig, path)


def plot_tradeoff(trade: dict, path):
    """Bias and shadow error against k (mean over seeds)."""
    plt = use_style()
    seeds = list(trade)
    ks = sorted(trade[seeds[0]])
    fig, ax = plt.subplots()
    ax.plot(ks, [np.mean([trade[s][k]["bias"] for s in seeds]) for k in ks], "o-", label="bias (exact expectations)")
    ts = sorted(trade[seeds[0]][ks[0]]["shadow_error"])
    for t in ts:
        ax.plot(ks, [np.mean([trade[s][k]["shadow_error"][t] for s in seeds]) for k in ks], "s--",
                label=f"shadow error, T={t}")
    ax.set_xlabel("truncation weight k")
    ax.set_ylabel("relative Frobenius error")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    return savefig(fig, path)
