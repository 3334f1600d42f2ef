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


def plot_two_hop(rows, path):
    """Two-hop models: bridge-entity decodability (held-out subjects) and patching recovery on two-hop
    vs one-hop prompts, per module (mean over motifs and seeds)."""
    plt = use_style()
    mods = [k[len("hop_patch_"):] for k in rows[0] if k.startswith("hop_patch_") and k != "hop_patch_argmax"]
    x = np.arange(len(mods))
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for key, lab in (("bridge_bpos_", "bridge @ bridge-relation pos."), ("bridge_last_", "bridge @ last pos."),
                     ("hop_probe_", "answer @ last pos.")):
        axes[0].plot(x, [np.mean([r[key + m] for r in rows]) for m in mods], marker="o", label=lab)
    axes[0].set_title("held-out probe accuracy (two-hop)")
    for off, key, lab in ((-0.2, "patch_", "one-hop prompts"), (0.2, "hop_patch_", "two-hop prompts")):
        axes[1].bar(x + off, [np.mean([r[key + m] for r in rows]) for m in mods], 0.4, label=lab)
    axes[1].set_title("patching recovery")
    for ax in axes:
        ax.set_xticks(x, mods)
        ax.legend(fontsize=7)
    return savefig(fig, path)
