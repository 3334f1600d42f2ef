"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_profiles(rows, path):
    """Per-module held-out probe accuracy and patching recovery, one panel per motif."""
    plt = use_style()
    motifs = list(dict.fromkeys(r["motif"] for r in rows))
    mods = [k[len("patch_"):] for k in rows[0] if k.startswith("patch_") and k[6:] not in ("argmax", "concentration")]
    fig, axes = plt.subplots(1, len(motifs), figsize=(3.2 * len(motifs), 3), sharey=True, squeeze=False)
    x = np.arange(len(mods))
    for ax, m in zip(axes[0], motifs):
        sel = [r for r in rows if r["motif"] == m]
        probe = np.array([[r[f"probe_{k}"] for k in mods] for r in sel])
        patch = np.array([[r[f"patch_{k}"] for k in mods] for r in sel])
        ax.bar(x - 0.2, probe.mean(0), 0.4, yerr=probe.std(0), label="probe acc (held-out)")
        ax.bar(x + 0.2, patch.mean(0), 0.4, yerr=patch.std(0), label="patching recovery")
        ax.set_xticks(x, mods)
        ax.set_title(m)
    axes[0][0].legend(fontsize=7)
    return savefig(fig, path)


def plot_edges(rows, profs, path):
    """Mean path-patching effect of every edge, per motif (a heat map of the edge graph)."""
    plt = use_style()
    motifs = list(dict.fromkeys(r["motif"] for r in rows))
    edges = list(profs[0]["edges"])
    M = np.array([[np.mean([p["edges"][e] for r, p in zip(rows, profs) if r["motif"] == m]) for e in edges]
                  for m in motifs])
    fig, ax = plt.subplots(figsize=(0.45 * len(edges) + 2, 0.5 * len(motifs) + 1.5))
    im = ax.imshow(M, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(edges)), edges, rotation=70, fontsize=7)
    ax.set_yticks(range(len(motifs)), motifs)
    fig.colorbar(im, ax=ax, label="logit-diff recovery")
    return savefig(fig, path)
