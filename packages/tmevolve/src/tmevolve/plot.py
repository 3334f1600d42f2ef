"""Plots: the only module that imports matplotlib."""

import numpy as np
import torch

from paperworks.plotting import savefig, use_style


@torch.no_grad()
def plot_regions_and_flux(model, data, path):
    """Planted tissue map, TMEvolve's regions (argmax S) and the boundary flux on the edges of one slide."""
    plt = use_style()
    model.eval()
    _, aux = model(data.x, data.edge_index)
    pos = data.pos.numpy()
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    axes[0].scatter(pos[:, 1], -pos[:, 0], c=data.tissue.numpy(), cmap="tab10", vmin=0, vmax=9, s=12, marker="s")
    axes[0].set_title("planted tissue (T S L N n)")
    axes[1].scatter(pos[:, 1], -pos[:, 0], c=aux["S"].argmax(-1).numpy(), cmap="tab20", s=12, marker="s")
    axes[1].set_title("regions (argmax S)")
    flux = aux["flux"].numpy()
    src, dst = data.edge_index.numpy()
    keep = flux > np.quantile(flux, 0.8)
    for s, d, f in zip(src[keep], dst[keep], flux[keep]):
        axes[2].plot([pos[s, 1], pos[d, 1]], [-pos[s, 0], -pos[d, 0]], color=plt.cm.magma(f / flux.max()), lw=1.5)
    axes[2].set_title("boundary flux (top 20% edges)")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    return savefig(fig, path)
