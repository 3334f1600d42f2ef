"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_all(A: dict, B: dict | None, out: Path) -> None:
    plt = use_style()
    # log distance vs iteration, per method and the control (first seed)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, series in sorted(A["traces"].items()):
        v = np.maximum(np.asarray(series, float), 1e-17)
        ax.semilogy(v, label=key, lw=1.2)
    ax.set_xlabel("iteration")
    ax.set_ylabel("distance to the maximizer set (sphere: ‖grad‖)")
    ax.legend(fontsize=7)
    savefig(fig, out / "distance.png")
    # κ̂, μ̂, ĉ vs radius
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    for ax, q, name in zip(axes, ("kappa", "pl", "qg"), ("κ̂ (error bound)", "μ̂ (PL)", "ĉ (quadratic growth)")):
        for kind, style in (("maximizer", "-o"), ("control", "--s")):
            rows = [c for c in A["consts"] if c["kind"] == kind]
            radii = sorted({c["radius"] for c in rows})
            med = [np.median([c[q] for c in rows if c["radius"] == r]) for r in radii]
            ax.loglog(radii, med, style, label=kind)
        ax.set_xlabel("radius r")
        ax.set_title(name)
        ax.legend(fontsize=7)
    savefig(fig, out / "constants.png")
    if B and B.get("cosines"):
        fig, axes = plt.subplots(1, len(B["cosines"]), figsize=(9, 4))
        for ax, (loss, C) in zip(np.atleast_1d(axes), B["cosines"].items()):
            im = ax.imshow(np.asarray(C), vmin=0, vmax=1, cmap="viridis")
            ax.set_title(f"{loss}: principal-angle cosines")
            ax.set_xlabel("class")
            ax.set_ylabel("class")
        fig.colorbar(im, ax=axes)
        savefig(fig, out / "principal_angles.png")
