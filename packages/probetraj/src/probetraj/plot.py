"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_trajectories(trajs, labels, path, *, title="", grid: int = 50):
    """Mean trajectory (on normalised CoT time) by outcome, with 20 faint examples of each."""
    plt = use_style()
    fig, ax = plt.subplots()
    u = np.linspace(0, 1, grid)
    for lab, colour in ((0, "tab:blue"), (1, "tab:red")):
        idx = np.nonzero(np.asarray(labels) == lab)[0]
        curves = np.stack([np.interp(u, np.linspace(0, 1, len(trajs[i])), trajs[i]) for i in idx]) if len(idx) else None
        if curves is None:
            continue
        for c in curves[:20]:
            ax.plot(u, c, color=colour, alpha=0.1, lw=0.8)
        ax.plot(u, curves.mean(0), color=colour, lw=2, label=f"answer {lab} (n={len(idx)})")
    ax.set_xlabel("relative CoT position")
    ax.set_ylabel("probe score")
    ax.set_title(f"probe trajectories by outcome {title}")
    ax.legend()
    return savefig(fig, path)


def plot_pooling_auroc(rows, poolings, path):
    plt = use_style()
    fig, ax = plt.subplots()
    x = np.arange(len(poolings))
    for k, data in enumerate(("template", "dynamic")):
        vals = [np.nanmean([r[f"auroc_{data}_{p}"] for r in rows]) for p in poolings]
        ax.bar(x + (k - 0.5) * 0.4, vals, width=0.4, label=data)
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set_xticks(x, poolings)
    ax.set_ylabel("AUROC (held-out rollouts)")
    ax.legend()
    return savefig(fig, path)
