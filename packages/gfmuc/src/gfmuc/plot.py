"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks import estimate
from paperworks.plotting import savefig, use_style

TARGET_ONLY = ("kmeans", "spectral", "dgi_kmeans", "dmon")


def plot_gain_vs_shift(rows, path):
    """NMI gain of GFM-UC over the best target-only method (by mean) against the homophily shift."""
    plt = use_style()
    fig, ax = plt.subplots()
    node = [r for r in rows if r["task"] == "transfer" and r["level"] == "node"]
    for target in sorted({r["target"] for r in node}):
        rs = [r for r in node if r["target"] == target]

        def col(m, rs=rs):
            return np.array([r["nmi"] for r in rs if r["method"] == m])

        best = max((m for m in TARGET_ONLY if col(m).size), key=lambda m: col(m).mean())
        e = estimate(list(col("gfmuc") - col(best)))
        shift = rs[0]["shift"]
        ax.errorbar([shift], [e.value], yerr=[[e.value - e.lower], [e.upper - e.value]], fmt="o", capsize=3,
                    label=f"{target} (vs {best})")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("homophily shift |h_target - mean h_sources|")
    ax.set_ylabel("NMI gain over best target-only")
    ax.legend(fontsize=7)
    return savefig(fig, path)
