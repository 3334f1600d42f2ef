"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_gap_vs_gamma(rows, path, learner="ce", reading="joint"):
    plt = use_style()
    studies = sorted({r["study"] for r in rows if "reading" in r})
    fig, axes = plt.subplots(1, len(studies), figsize=(5 * len(studies), 4), squeeze=False)
    for ax, study in zip(axes[0], studies):
        for (ln, rd, mk) in ((learner, reading, "o"), ("slda", "task_il", "s")):
            pts = [r for r in rows if r.get("study") == study and r.get("learner") == ln and r.get("reading") == rd
                   and r["gap"] > 0]
            if pts:
                ax.semilogy([r["gamma_task"] for r in pts], [r["gap"] for r in pts], mk, alpha=0.6,
                            label=f"{ln}, reading {'a' if rd == 'joint' else 'b'}")
        g = np.array([r["gamma_task"] for r in rows if r.get("study") == study and "gamma_task" in r])
        if g.size:
            grid = np.linspace(max(g.min(), 0), g.max(), 100)
            ax.semilogy(grid, np.exp(-grid / 8), "k--", label="exp(−γ/8)")
        ax.set_xlabel("γ̂_min (task centroids)")
        ax.set_ylabel("TC gap")
        ax.set_title(study)
        ax.legend(fontsize=8)
    return savefig(fig, path)


def plot_ecf(rows, path):
    plt = use_style()
    fig, ax = plt.subplots()
    ks = sorted(int(k[6:]) for k in rows[0] if k.startswith("E_CF_K"))
    for alpha in sorted({r["alpha"] for r in rows}):
        for clipped in (False, True):
            rs = [r for r in rows if r["alpha"] == alpha and r["clipped"] == clipped]
            ax.loglog(ks, [np.mean([r[f"E_CF_K{k}"] for r in rs]) for k in ks], "o-" if clipped else "s--",
                      label=f"α={alpha:g}{', clipped' if clipped else ''}")
    ax.set_xlabel("budget K")
    ax.set_ylabel("E_CF = E‖w̄_K − w*‖")
    ax.legend(fontsize=8)
    return savefig(fig, path)


def plot_drift(rows, path):
    plt = use_style()
    fig, ax = plt.subplots()
    keys = [k for k in rows[0] if k.startswith("drift_lr")]
    lrs = [float(k[8:]) for k in keys]
    for r in rows:
        ax.plot(lrs, [r[k] for k in keys], "o-", alpha=0.6)
    ax.set_xlabel("backbone learning rate")
    ax.set_ylabel("relative feature drift")
    return savefig(fig, path)


def plot_all(metrics, cfg, out_dir: Path):
    gap = [r for r in metrics if r.get("study") in ("gaussian", "digits")]
    if gap:
        plot_gap_vs_gamma(gap, out_dir / "gap_vs_gamma.png")
    ecf = [r for r in metrics if r.get("study") == "ecf"]
    if ecf:
        plot_ecf(ecf, out_dir / "ecf_vs_K.png")
    drift = [r for r in metrics if r.get("study") == "drift"]
    if drift:
        plot_drift(drift, out_dir / "drift_vs_lr.png")
