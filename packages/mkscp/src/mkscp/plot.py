"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_ratio_vs_d(rows, path):
    """Geometric-mean volume ratio MKS / Mahalanobis against d, one line per residual type and alpha."""
    plt = use_style()
    kinds = sorted({r["residuals"] for r in rows})
    alphas = sorted({r["alpha"] for r in rows})
    fig, axes = plt.subplots(1, len(kinds), figsize=(3.2 * len(kinds), 3.0), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for a in alphas:
            ds = sorted({r["d"] for r in rows if r["residuals"] == kind})
            ys = [np.exp(np.mean(np.log([r["ratio_vs_mahalanobis"] for r in rows if r["residuals"] == kind
                                         and r["d"] == d and r["alpha"] == a and r["score"] == "mks"])))
                  for d in ds]
            ax.plot(ds, ys, marker="o", label=f"alpha={a}")
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_title(kind)
        ax.set_xlabel("output dimension d")
        ax.set_yscale("log")
    axes[0][0].set_ylabel("vol(MKS) / vol(Mahalanobis)")
    axes[0][-1].legend()
    return savefig(fig, path)


def plot_regions(grids, path):
    """2-D prediction regions side by side (rows: residual types; columns: scores)."""
    plt = use_style()
    names = list(grids[0]["panels"])
    fig, axes = plt.subplots(len(grids), len(names), figsize=(2.6 * len(names), 2.5 * len(grids)), squeeze=False)
    for i, g in enumerate(grids):
        for j, name in enumerate(names):
            ax = axes[i][j]
            ax.scatter(g["test"][:, 0], g["test"][:, 1], s=2, color="0.6", alpha=0.5)
            ax.contour(g["gx"], g["gy"], g["panels"][name].astype(float), levels=[0.5], colors="C0")
            ax.set_title(f"{name} ({g['residuals']})")
            ax.set_xticks([])
            ax.set_yticks([])
    return savefig(fig, path)


def plot_bench(rows, path):
    """Fit and scoring CPU time against n_fit, exact vs Nyström (median over the bench's repeats)."""
    plt = use_style()
    fig, ax = plt.subplots()
    for what, ls in (("fit", "-"), ("score", "--")):
        for variant in ("exact", "nystrom"):
            rs = sorted((r for r in rows if r.get("what") == what and r.get("variant") == variant),
                        key=lambda r: r["n_fit"])
            if rs:
                ax.plot([r["n_fit"] for r in rs], [r["cpu_median_s"] for r in rs], marker="o", ls=ls,
                        label=f"{variant} {what}")
    ax.set_xlabel("n_fit")
    ax.set_ylabel("CPU seconds")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend()
    return savefig(fig, path)
