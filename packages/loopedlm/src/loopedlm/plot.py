"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_all(rows, extra, out_dir):
    plt = use_style()
    if extra.get("a_curves"):  # by recurrence
        fig, ax = plt.subplots()
        for key, curve in extra["a_curves"].items():
            norm, inj, k, seed = key.split("|")
            if seed == "0":
                ax.semilogy(np.arange(2, len(curve) + 2), np.maximum(curve, 1e-12), label=f"{norm} inj={inj} k={k}")
        ax.set_xlabel("recurrence")
        ax.set_ylabel("‖X_t − X_{t−1}‖/‖X_t‖")
        ax.legend(fontsize=5)
        savefig(fig, out_dir / "by_recurrence.png")
    if extra.get("b_profiles"):  # ColSum by layer, looped vs control at relative depth
        fig, ax = plt.subplots()
        for _key, p in list(extra["b_profiles"].items())[:1]:
            looped = np.asarray(p["looped"])
            for t, prof in enumerate(looped):
                ax.plot((np.arange(len(prof)) + 0.5) / len(prof), prof, "o-", alpha=0.6, label=f"looped t={t + 1}")
            c = np.asarray(p["control"])
            ax.plot((np.arange(len(c)) + 0.5) / len(c), c, "k--", label="feedforward control")
        ax.set_xlabel("relative depth in block")
        ax.set_ylabel("ColSum C")
        ax.legend(fontsize=6)
        savefig(fig, out_dir / "colsum.png")
