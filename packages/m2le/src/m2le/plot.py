"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_acc_matrices(acc: dict, path):
    """One accuracy matrix A[i, j] (after task i, on task j) per (stream, method), seed 0."""
    plt = use_style()
    keys = sorted(acc)
    streams = sorted({s for s, _ in keys})
    methods = list(dict.fromkeys(m for _, m in keys))
    fig, axes = plt.subplots(len(streams), len(methods), figsize=(2.2 * len(methods), 2.2 * len(streams)),
                             squeeze=False)
    for i, s in enumerate(streams):
        for j, m in enumerate(methods):
            ax = axes[i, j]
            A = acc.get((s, m))
            if A is not None:
                ax.imshow(np.where(np.tril(np.ones_like(A)) > 0, A, np.nan), vmin=0, vmax=1, cmap="viridis")
                ax.set_title(f"{m}\n{s} final {A[-1].mean():.2f}", fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
    return savefig(fig, path)


def plot_modulations(ms: dict, alphas: dict, path):
    """Histograms of HIM's m per layer (last merge, seed 0) beside the scalar α* of the same stream."""
    plt = use_style()
    keys = sorted(ms)
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 2.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for layer, v in ms[key].items():
            ax.hist(v, bins=40, range=(0, 1), alpha=0.5, label=layer, density=True)
        a = alphas.get(key[0])
        if a:
            ax.axvline(a[-1], color="k", ls="--", label=f"α* = {a[-1]:.2f}")
        ax.set_title(f"{key[1]} {key[0]}", fontsize=8)
        ax.set_xlabel("m")
        ax.legend(fontsize=6)
    return savefig(fig, path)
