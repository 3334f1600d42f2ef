"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

from collections import defaultdict

from paperworks.plotting import savefig, use_style

STYLES = {"ftp": "o-", "robust": "s-", "robust_oracle": "^--", "robust_conformal": "v:", "robust_cv": "p-.",
          "fixed_shading": "d-", "ric_h": "x-", "bound": "k:"}


def plot_sweep(rows, path, *, problem: str, noise: str):
    """Mean excess loss against η (log–log) for every policy, one problem and noise kind."""
    plt = use_style()
    fig, ax = plt.subplots()
    agg = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("setting") == "controlled" and r["problem"] == problem and r["noise"] == noise:
            agg[r["policy"]][r["eta"]].append(r["excess_loss"])
            agg["bound"][r["eta"]].append(r["bound"]) if r["policy"] == "robust" else None
    for pol, by_eta in agg.items():
        etas = sorted(by_eta)
        ys = [max(sum(by_eta[e]) / len(by_eta[e]), 1e-12) for e in etas]
        ax.plot(etas, ys, STYLES.get(pol, "-"), label=pol, ms=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predictor RMSE η")
    ax.set_ylabel("excess loss over full information")
    ax.set_title(f"{problem}, {noise} errors")
    ax.legend(fontsize=7)
    return savefig(fig, path)


def plot_bench(rows, path):
    """Decisions per second of every timed candidate (rows from the bench's metrics)."""
    plt = use_style()
    fig, ax = plt.subplots()
    labels = [r["candidate"].replace(": ", "\n") for r in rows]
    ax.bar(range(len(rows)), [r["decisions_per_s"] for r in rows])
    ax.set_xticks(range(len(rows)), labels, fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel("decisions per second")
    return savefig(fig, path)
