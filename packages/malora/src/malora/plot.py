"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def _mean_by(rows, key, value):
    xs = sorted({r[key] for r in rows})
    return np.array(xs), np.array([np.mean([r[value] for r in rows if r[key] == x]) for x in xs])


def plot_lambda(rows, path):
    """Exp A: PT/FT margins and cos(ΔW, SVM) vs λ (ρ = 0), with the closed form, the band edge and λ_max."""
    plt = use_style()
    r0 = [r for r in rows if r["rho"] == 0.0] or rows
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for key, cf, label in (("ft_margin", "ft_closed_form", "FT"), ("pt_margin", "pt_closed_form", "PT")):
        x, y = _mean_by(r0, "lam", key)
        _, c = _mean_by(r0, "lam", cf)
        ax1.semilogx(x, y, "o-", label=f"{label} trained")
        ax1.semilogx(x, c, "--", label=f"{label} closed form")
    for rho in sorted({r["rho"] for r in rows if r["rho"] > 0}):
        x, y = _mean_by([r for r in rows if r["rho"] == rho], "lam", "pt_margin")
        ax1.semilogx(x, y, ":", label=f"PT trained, ρ={rho:g}")
    band, lmax = np.mean([r["lam_band"] for r in r0]), np.mean([r["lam_max"] for r in r0])
    x, y = _mean_by(r0, "lam", "cos_svm")
    ax2.semilogx(x, y, "o-", label="cos(ΔW, SVM), ρ=0")
    for ax in (ax1, ax2):
        ax.axvline(band, color="grey", ls="--", lw=0.8)
        ax.axvline(lmax, color="k", ls=":", lw=0.8)
        ax.set_xlabel("λ (grey: band edge, black: λ_max)")
    ax1.set_ylabel("normalised min-margin")
    ax2.set_ylabel("cosine")
    ax1.legend(fontsize=7)
    ax2.legend(fontsize=7)
    return savefig(fig, path)


def plot_merging(rows, path):
    """Exp B: test union min-margin and min-task accuracy vs ρ per method (difficulties spread)."""
    plt = use_style()
    rs = [r for r in rows if r["difficulty"] == "spread"] or rows
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for m in sorted({r["method"] for r in rs}, key=lambda m: (m != "malora", m)):
        sub = [r for r in rs if r["method"] == m]
        x, y = _mean_by(sub, "rho", "test_min_margin")
        ax1.plot(x, y, "o-", label=m, lw=2.0 if m == "malora" else 1.0)
        x, y = _mean_by(sub, "rho", "test_min_acc")
        ax2.plot(x, y, "o-", label=m, lw=2.0 if m == "malora" else 1.0)
    ax1.set_ylabel("test union min-margin")
    ax2.set_ylabel("test min-task accuracy")
    for ax in (ax1, ax2):
        ax.set_xlabel("overlap ρ")
    ax1.legend(fontsize=7)
    return savefig(fig, path)
