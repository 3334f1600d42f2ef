"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_geometry_vs_l0(rows, path, domain: str = "heldout"):
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key in zip(axes, ("geometry_spearman", "concept_auroc"), strict=True):
        for m in sorted({r["method"] for r in rows}):
            l0s = sorted({r["target_l0"] for r in rows})
            ys = [np.mean([r[key] for r in rows if r["method"] == m and r["target_l0"] == k and r["domain"] == domain])
                  for k in l0s]
            ax.plot(l0s, ys, marker="o", label=m)
        ax.set_xlabel("L0")
        ax.set_ylabel(key)
        ax.set_title(domain)
    axes[0].legend()
    return savefig(fig, path)
