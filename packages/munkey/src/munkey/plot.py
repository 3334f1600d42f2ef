"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_mia_hist(hist: dict, path):
    """Forget-set loss histograms (original, deleted, oracle) against the test set's."""
    plt = use_style()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bins = np.linspace(0, np.log1p(max(float(np.max(hist[k])) for k in ("test", "original", "deleted", "oracle"))), 30)
    for k, c in (("test", "grey"), ("original", "C3"), ("deleted", "C0"), ("oracle", "C2")):
        ax.hist(np.log1p(hist[k]), bins=bins, density=True, histtype="step", color=c, lw=1.5,
                label=f"{k} ({'test set' if k == 'test' else 'forget set'})")
    ax.set_xlabel("log(1 + loss)")
    ax.set_ylabel("density")
    ax.set_title(hist.get("title", ""), fontsize=9)
    ax.legend(fontsize=8)
    return savefig(fig, path)


def plot_gap_vs_time(rows, path):
    """Avg-Gap to the oracle against unlearning time, one point per method (mean over seeds), per scenario."""
    plt = use_style()
    groups = sorted({(r["dataset"], r["scenario"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3.5), squeeze=False)
    skip = {"original_munkey", "original_vit", "oracle_munkey"}
    for ax, (ds, sc) in zip(axes[0], groups, strict=True):
        sel = [r for r in rows if r["dataset"] == ds and r["scenario"] == sc and r["method"] not in skip]
        for i, m in enumerate(sorted({r["method"] for r in sel})):
            rs = [r for r in sel if r["method"] == m]
            t = max(np.mean([r.get("time_s", np.nan) for r in rs]), 1e-6)
            ax.scatter(t, np.mean([r["avg_gap"] for r in rs]), color=f"C{i % 10}", label=m)
        ax.set_xscale("log")
        ax.set_xlabel("unlearning time (s)")
        ax.set_ylabel("Avg-Gap (points)")
        ax.set_title(f"{ds} / {sc}", fontsize=9)
    axes[0][-1].legend(fontsize=7)
    return savefig(fig, path)
