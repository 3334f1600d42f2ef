"""Plots: the only module that imports matplotlib."""

import numpy as np

from paperworks.plotting import savefig, use_style

_NAMES = {"ng": "natural gradient", "sgd": "MCE-IRL (tuned step)", "adam": "MCE-IRL (Adam)"}


def plot_dual(rows, path, setting=None):
    """Dual objective (minus its best value) against soft-VI solves, median over seeds."""
    plt = use_style()
    setting = setting or next(r["setting"] for r in rows if r["setting"].startswith("N"))
    fig, ax = plt.subplots()
    sel = [r for r in rows if r["setting"] == setting and "dual_curve" in r]
    best = {s: min(min(r["dual_curve"]) for r in sel if r["seed"] == s) for s in {r["seed"] for r in sel}}
    for m, label in _NAMES.items():
        curves = [np.asarray(r["dual_curve"]) - best[r["seed"]] for r in sel if r["method"] == m]
        if not curves:
            continue
        L = max(len(c) for c in curves)
        pad = np.array([np.pad(c, (0, L - len(c)), mode="edge") for c in curves])
        ax.semilogy(np.arange(1, L + 1), np.median(pad, 0) + 1e-12, label=label)
    ax.set_xlabel("soft-VI solves")
    ax.set_ylabel(f"dual − best ({setting})")
    ax.legend()
    return savefig(fig, path)


def plot_transfer(rows, path):
    """Normalised true return after re-planning under the changed slip."""
    plt = use_style()
    fig, ax = plt.subplots()
    sel = [r for r in rows if r["setting"] == "transfer"]
    vals = [[r["transfer_return"] for r in sel if r["method"] == m] for m in _NAMES]
    ax.boxplot(vals)
    ax.set_xticks(range(1, len(_NAMES) + 1), list(_NAMES.values()))
    ax.set_ylabel("normalised return (new slip)")
    return savefig(fig, path)
