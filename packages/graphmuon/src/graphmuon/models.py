"""The small GNNs of the experiments (PyG layers only)."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GCNConv, GINConv, SGConv, global_add_pool


def adjacency(data):
    """``data.adj_t`` (a sparse adjacency, faster on CPU) when present, else ``data.edge_index``."""
    return data.adj_t if "adj_t" in data else data.edge_index


class _ConvStack(nn.Module):
    """``self.convs`` applied in turn on the graph's adjacency, ReLU between them."""

    def forward(self, data) -> torch.Tensor:
        x = data.x
        for i, conv in enumerate(self.convs):
            x = conv(x, adjacency(data))
            if i < len(self.convs) - 1:
                x = x.relu()
        return x


class GCN(_ConvStack):
    """``layers`` GCNConv layers with ReLU between them (Kipf & Welling)."""

    def __init__(self, in_channels: int, hidden: int, out_channels: int, layers: int = 2):
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        dims = [in_channels] + [hidden] * (layers - 1) + [out_channels]
        self.convs = nn.ModuleList(GCNConv(a, b, cached=True) for a, b in zip(dims[:-1], dims[1:]))


class DeepSGC(_ConvStack):
    """SGC/APPNP-style deep propagation: ``layers`` SGConv layers of ``K`` hops each (linear after Â^K)."""

    def __init__(self, in_channels: int, hidden: int, out_channels: int, K: int, layers: int = 2):
        super().__init__()
        if layers < 1 or K < 1:
            raise ValueError(f"layers and K must be >= 1, got layers={layers}, K={K}")
        dims = [in_channels] + [hidden] * (layers - 1) + [out_channels]
        self.convs = nn.ModuleList(SGConv(a, b, K=K, cached=(i == 0)) for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])))


class GIN(nn.Module):
    """GIN (Xu et al.): ``layers`` GINConv layers with 2-layer MLPs, sum pooling, a linear head."""

    def __init__(self, in_channels: int, hidden: int, out_channels: int, layers: int = 2):
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        dims = [in_channels] + [hidden] * layers
        self.convs = nn.ModuleList(
            GINConv(nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b))) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(hidden, out_channels)

    def forward(self, data) -> torch.Tensor:
        x = data.x
        for conv in self.convs:
            x = conv(x, adjacency(data)).relu()
        return self.head(global_add_pool(x, data.batch))


def build_model(kind: str, in_channels: int, hidden: int, out_channels: int, *, layers: int = 2, K: int = 1):
    """``"gcn"``, ``"sgc"`` (deep propagation, ``K`` hops per layer) or ``"gin"``."""
    if kind == "gcn":
        return GCN(in_channels, hidden, out_channels, layers)
    if kind == "sgc":
        return DeepSGC(in_channels, hidden, out_channels, K, layers)
    if kind == "gin":
        return GIN(in_channels, hidden, out_channels, layers)
    raise ValueError(f"model kind must be 'gcn', 'sgc' or 'gin', got {kind!r}")
