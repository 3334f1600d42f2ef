"""Plots: the only module that imports matplotlib."""

from pathlib import Path

import pandas as pd

from paperworks.plotting import savefig, use_style


def plot_layers(layer_rows, out_dir):
    """AUROC vs layer (necessity, action) and |cos| vs layer with its references, per model."""
    plt = use_style()
    df = pd.DataFrame(layer_rows)
    models = list(dict.fromkeys(df.model))
    mean = df.groupby(["model", "layer"]).mean(numeric_only=True).reset_index()
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 3.5), squeeze=False)
    for ax, m in zip(axes[0], models):
        g = mean[mean.model == m]
        ax.plot(g.layer, g.auroc_necessity, "o-", label="necessity")
        ax.plot(g.layer, g.auroc_action, "s-", label="action")
        ax.axhline(0.5, color="gray", ls=":")
        ax.set(title=m, xlabel="layer (0 = embeddings)", ylabel="out-of-fold AUROC", ylim=(0.4, 1.02))
        ax.legend()
    savefig(fig, Path(out_dir) / "auroc_vs_layer.png")
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 3.5), squeeze=False)
    for ax, m in zip(axes[0], models):
        g = mean[mean.model == m]
        ax.plot(g.layer, g.cos_raw.abs(), "o-", label="|cos| necessity·action")
        ax.plot(g.layer, g.same_necessity, "--", label="same-label necessity")
        ax.plot(g.layer, g.same_action, "--", label="same-label action")
        ax.plot(g.layer, g.induced.abs(), ":", label="label-correlation induced")
        ax.plot(g.layer, g.random, ":", color="gray", label="random")
        ax.set(title=m, xlabel="layer (0 = embeddings)", ylabel="cosine", ylim=(0, 1.02))
        ax.legend(fontsize=7)
    savefig(fig, Path(out_dir) / "cosine_vs_layer.png")
