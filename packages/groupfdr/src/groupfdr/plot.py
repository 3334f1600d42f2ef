"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style

METHODS = ("block_gm", "block_gm_whitened", "coordinate_gm_any_lag", "bh_group_ftest", "group_knockoffs", "group_lasso")


def plot_fdr_power(lin: dict, q: float, path):
    """FDR and power against ρ, one line per method (mean ± 1 SE over repetitions)."""
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    rhos = sorted(lin)
    for m in METHODS:
        for ax, kind in zip(axes, ("fdp", "power")):
            key = f"{kind}_{m}"
            pts = [(rho, [r[key] for r in lin[rho] if key in r]) for rho in rhos]
            pts = [(rho, v) for rho, v in pts if v]
            if not pts:
                continue
            x = [p[0] for p in pts]
            mean = [np.mean(v) for _, v in pts]
            se = [np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0 for _, v in pts]
            ax.errorbar(x, mean, yerr=se, marker="o", capsize=3, label=m)
    axes[0].axhline(q, color="k", ls="--", lw=1)
    axes[0].set(xlabel="within-block correlation ρ", ylabel="group FDR")
    axes[1].set(xlabel="within-block correlation ρ", ylabel="power")
    axes[1].legend(fontsize=7)
    return savefig(fig, path)


def plot_null_histograms(lin: dict, nulls: list, neural: list, path):
    """Histograms of null-group statistics: global-null M_g, and neural null M_g."""
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    M = np.concatenate([r["M"] for r in nulls]) if nulls else np.array([])
    if M.size:
        axes[0].hist(M, bins=60, color="C0")
    axes[0].set(title="global null: block GM M_g", xlabel="M_g")
    nm = np.concatenate([r["null_M"] for r in neural]) if neural else np.array([])
    if nm.size:
        axes[1].hist(nm, bins=40, color="C1")
    axes[1].set(title="neural: null-group M_g", xlabel="M_g")
    for ax in axes:
        ax.axvline(0, color="k", lw=1)
    return savefig(fig, path)
