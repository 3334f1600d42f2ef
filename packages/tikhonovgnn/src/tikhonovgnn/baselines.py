"""The opaque baselines, built from PyG layers, with the same read-outs as :class:`TikhonovGNN`.

GCN (``GCNConv``), GIN (``GINConv`` via PyG's ``GIN``), ChebNet (``ChebConv``), APPNP (an MLP then
``APPNP`` propagation) and a node-wise MLP. ``task="graph"`` pools (sum or mean) and applies a linear
head; ``task="node"`` returns node logits.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import APPNP, MLP, ChebConv, global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.nn.models import GCN, GIN

__all__ = ["BASELINES", "Baseline", "make_model"]

BASELINES = ("gcn", "gin", "cheb", "appnp", "mlp")

_POOLS = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}


class _Cheb(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out: int, num_layers: int, K: int = 3):
        super().__init__()
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out]
        self.convs = nn.ModuleList(ChebConv(a, b, K) for a, b in zip(dims[:-1], dims[1:]))

    def reset_parameters(self) -> None:
        for c in self.convs:
            c.reset_parameters()

    def forward(self, x, edge_index):
        for i, c in enumerate(self.convs):
            x = c(x, edge_index)
            if i + 1 < len(self.convs):
                x = x.relu()
        return x


class _APPNPNet(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out: int, num_layers: int, K: int = 10, alpha: float = 0.1):
        super().__init__()
        self.mlp = MLP([in_channels] + [hidden] * (num_layers - 1) + [out], norm=None)
        self.prop = APPNP(K, alpha)

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()

    def forward(self, x, edge_index):
        return self.prop(self.mlp(x), edge_index)


class _MLPNet(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out: int, num_layers: int):
        super().__init__()
        self.mlp = MLP([in_channels] + [hidden] * (num_layers - 1) + [out], norm=None)

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()

    def forward(self, x, edge_index):
        return self.mlp(x)


class Baseline(nn.Module):
    """``name`` ∈ :data:`BASELINES` as a graph (pooled) or node classifier.

    Args:
        name: ``gcn``, ``gin``, ``cheb``, ``appnp`` or ``mlp``.
        in_channels, hidden_channels, out_channels: sizes.
        num_layers: message-passing depth (MLP depth for ``mlp``/``appnp``).
        task: ``"graph"`` or ``"node"``; pool: ``"sum"``, ``"mean"`` or ``"max"``.
    """

    def __init__(self, name: str, in_channels: int, hidden_channels: int, out_channels: int, *,
                 num_layers: int = 3, task: str = "graph", pool: str = "sum"):
        super().__init__()
        if name not in BASELINES:
            raise ValueError(f"name must be one of {BASELINES}, got {name!r}")
        if task not in ("graph", "node"):
            raise ValueError(f"task must be 'graph' or 'node', got {task!r}")
        if pool not in _POOLS:
            raise ValueError(f"pool must be one of {sorted(_POOLS)}, got {pool!r}")
        self.name, self.task, self.pool = name, task, pool
        enc_out = hidden_channels if task == "graph" else out_channels
        if name == "gcn":
            self.encoder = GCN(in_channels, hidden_channels, num_layers, out_channels=enc_out)
        elif name == "gin":
            self.encoder = GIN(in_channels, hidden_channels, num_layers, out_channels=enc_out)
        elif name == "cheb":
            self.encoder = _Cheb(in_channels, hidden_channels, enc_out, num_layers)
        elif name == "appnp":
            self.encoder = _APPNPNet(in_channels, hidden_channels, enc_out, max(num_layers, 2))
        else:
            self.encoder = _MLPNet(in_channels, hidden_channels, enc_out, max(num_layers, 2))
        self.head = nn.Linear(hidden_channels, out_channels) if task == "graph" else None

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        if self.head is not None:
            self.head.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None, **_) -> Tensor:
        h = self.encoder(x, edge_index)
        if self.task == "node":
            return h
        if batch is None:
            batch = torch.zeros(x.size(0), dtype=torch.long, device=x.device)
        h = h.relu()
        pooled = _POOLS[self.pool](h, batch)
        return self.head(pooled)


def make_model(name: str, in_channels: int, hidden_channels: int, out_channels: int, *, task: str = "graph",
               pool: str = "sum", num_layers: int = 3, tikhonov: dict | None = None) -> nn.Module:
    """``"tikhonov"`` (a :class:`~tikhonovgnn.TikhonovGNN` with ``tikhonov`` layer kwargs) or a baseline."""
    if name == "tikhonov":
        from tikhonovgnn.tikhonov import TikhonovGNN

        return TikhonovGNN(in_channels, hidden_channels, out_channels, task=task, pool=pool, **(tikhonov or {}))
    return Baseline(name, in_channels, hidden_channels, out_channels, num_layers=num_layers, task=task, pool=pool)
