"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style
from paperworks.stats import binomial_ci


def plot_null_hists(arrays, path):
    """Null (NoWM) z histograms per attack, local vs global (first seed)."""
    plt = use_style()
    seed = min(s for s, _ in arrays)
    kinds = [k for k in ("local", "global") if (seed, k) in arrays]
    names = [n for n in arrays[(seed, kinds[0])] if n != "clean"]
    fig, axes = plt.subplots(len(kinds), len(names), figsize=(2.4 * len(names), 2.4 * len(kinds)), squeeze=False)
    for i, k in enumerate(kinds):
        arr = arrays[(seed, k)]
        bins = np.linspace(min(v.min() for v in arr.values()), max(v.max() for v in arr.values()), 25)
        for j, n in enumerate(names):
            ax = axes[i, j]
            ax.hist(arr["clean"], bins=bins, alpha=0.5, label="clean", density=True)
            ax.hist(arr[n], bins=bins, alpha=0.5, label=n, density=True)
            ax.set_title(f"{k}: {n}", fontsize=8)
    axes[0, 0].legend(fontsize=6)
    return savefig(fig, path)


def plot_fpr(att, n_eval, path):
    """Attacked-NoWM FPR per attack (pooled over seeds) with Clopper–Pearson intervals."""
    plt = use_style()
    fig, ax = plt.subplots(figsize=(7, 3))
    keys = sorted({(a["attack"], a["strength"]) for a in att})
    for off, kind in ((-0.15, "local"), (0.15, "global")):
        vals, lo, hi = [], [], []
        for k in keys:
            r = [a for a in att if (a["attack"], a["strength"]) == k and a["tokenizer"] == kind]
            if not r:
                continue
            e = binomial_ci(int(sum(a["fp"] for a in r)), int(n_eval * len(r)))
            vals.append(e.value)
            lo.append(e.value - e.lower)
            hi.append(e.upper - e.value)
        if vals:
            ax.errorbar(np.arange(len(vals)) + off, vals, yerr=[lo, hi], fmt="o", label=kind, capsize=2)
    ax.axhline(0.01, ls="--", c="k", lw=0.8)
    ax.set_xticks(range(len(keys)), [f"{a}@{s}" for a, s in keys], fontsize=7)
    ax.set_ylabel("attacked-NoWM FPR")
    ax.legend()
    return savefig(fig, path)
