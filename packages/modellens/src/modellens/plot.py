"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_tau(per, path):
    """τ_w per method and split (mean over seeds, ± s.d.)."""
    plt = use_style()
    modes = list(per)
    methods = [m for m in ("modellens", "popularity", "knn_meta", "knn_text", "mf", "run_each", "logme", "leep",
                           "nce", "random") if any(m in per[s] for s in modes)]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(modes) + 2), 3.5))
    w = 0.8 / max(len(methods), 1)
    for i, m in enumerate(methods):
        xs, ys, es = [], [], []
        for j, s in enumerate(modes):
            if m in per[s]:
                v = np.asarray(per[s][m]["tau_w"])
                xs.append(j + i * w)
                ys.append(v.mean())
                es.append(v.std())
        ax.bar(xs, ys, w, yerr=es, label=m)
    ax.set_xticks(np.arange(len(modes)) + 0.4 - w / 2, modes)
    ax.set_ylabel("weighted Kendall τ_w")
    ax.axhline(0, color="k", lw=0.5)
    ax.legend(fontsize=7, ncol=2)
    return savefig(fig, path)


def plot_regret(per_seed, path):
    """Router regret vs Top-K pool size for each pool source (mean over seeds)."""
    plt = use_style()
    fig, ax = plt.subplots()
    for src in per_seed[0]["regret"]:
        ks = sorted(per_seed[0]["regret"][src])
        ax.plot(ks, [np.mean([r["regret"][src][k] for r in per_seed]) for k in ks], marker="o", label=src)
    ax.set_xscale("log")
    ax.set_xlabel("pool size K (fits spent)")
    ax.set_ylabel("regret to the best model")
    ax.legend()
    return savefig(fig, path)
