"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_attributions(x3: dict, path):
    """Mean attribution to x3 per model and game (learned case)."""
    plt = use_style()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels, vals = [], []
    for model, games in x3.items():
        for game, v in games.items():
            labels.append(f"{model}\n{game}")
            vals.append(v)
    ax.bar(np.arange(len(vals)), vals)
    ax.set_xticks(np.arange(len(vals)), labels, rotation=90, fontsize=6)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylabel("mean attribution to x3")
    return savefig(fig, path)


def plot_knn_error(rows, path):
    """Relative error of the kNN/KSG attributions against the closed form, by sample size."""
    plt = use_style()
    fig, ax = plt.subplots()
    for d in sorted({r["d"] for r in rows}):
        ns = sorted({r["n"] for r in rows})
        ax.plot(ns, [np.mean([r["rel_err_knn"] for r in rows if r["n"] == n and r["d"] == d]) for n in ns],
                "o-", label=f"d = {d}")
    ax.set_xscale("log")
    ax.set_xlabel("samples n")
    ax.set_ylabel("relative error vs closed form")
    ax.legend()
    return savefig(fig, path)
