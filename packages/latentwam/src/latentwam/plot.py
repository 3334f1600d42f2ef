"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from latentwam.run import LABELS
from paperworks.plotting import savefig, use_style


def plot_success(rows, path, refs=None):
    """Intercept success vs number of demos, mean ± std over seeds, per arm (expert/chase/random lines)."""
    plt = use_style()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    rows = [r for r in rows if r["task"] == "intercept"]
    for arm in ("vla", "latent", "pixel"):
        demos = sorted({r["demos"] for r in rows if r["arm"] == arm})
        if len(demos) < 1:
            continue
        vals = [[r["success"] for r in rows if r["arm"] == arm and r["demos"] == n] for n in demos]
        ax.errorbar(demos, [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], marker="o", capsize=3,
                    label=LABELS[arm])
    for name, style in (("expert", ":"), ("chase", "--"), ("random", "-.")):
        if refs and name in refs:
            ax.axhline(refs[name], ls=style, color="grey", lw=1)
            ax.text(ax.get_xlim()[0], refs[name], f" {name}", va="bottom", fontsize=7, color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("expert demos")
    ax.set_ylabel("closed-loop success (Intercept-v0)")
    ax.legend(fontsize=8)
    return savefig(fig, path)


def plot_rank(curves, path):
    """Effective rank of the prior latents by training step, regulariser on and off (mean over seeds)."""
    plt = use_style()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for arm in ("latent", "no_reg", "no_stopgrad", "no_posterior"):
        pts = [c for c in curves if c["arm"] == arm]
        if not pts:
            continue
        n = min(c["demos"] for c in pts)
        pts = [c for c in pts if c["demos"] == n]
        steps = sorted({c["step"] for c in pts})
        ax.plot(steps, [np.mean([c["eff_rank"] for c in pts if c["step"] == s]) for s in steps], marker=".",
                label=f"{LABELS[arm]} ({n} demos)")
    ax.set_xlabel("training step")
    ax.set_ylabel("effective rank of prior latents")
    ax.legend(fontsize=8)
    return savefig(fig, path)
