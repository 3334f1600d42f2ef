"""Baselines, all ``forward(x, edge_index, batch=None) -> (out, aux)`` like :class:`tmevolve.TMEvolve`.

mean-pool; ABMIL and TransMIL from ``torchmil``; PatchGCN (Chen et al., MICCAI 2021: residual
GENConv/DeepGCN layers + gated attention pooling, with PyG); static k-means regions + pooling;
a concept-bottleneck MIL (attention over concept scores); and the concept-edge histogram: the
strongest simple baseline with TMEvolve's information (concept scores and the graph): the slide's
soft concept-pair edge counts and concept proportions through an MLP.
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import DeepGCNLayer, GENConv
from torch_geometric.nn.aggr import AttentionalAggregation
from torch_geometric.utils import scatter, to_dense_batch

from tmevolve.evolve import concept_scores


def _batch(x, batch):
    return torch.zeros(x.shape[0], dtype=torch.long, device=x.device) if batch is None else batch


def _mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.GELU(), nn.Linear(h, o))


class MeanPoolMIL(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, **_):
        super().__init__()
        self.mlp = _mlp(in_channels, hidden_channels, out_channels)

    def forward(self, x, edge_index, batch=None):
        return self.mlp(scatter(x, _batch(x, batch), dim=0, reduce="mean")), {}


class _TorchMIL(nn.Module):
    """A torchmil model on PyG batches (padded with ``to_dense_batch``), one output per slide."""

    def __init__(self, model, out_channels):
        super().__init__()
        if out_channels != 1:
            raise ValueError("the torchmil baselines give one output per slide (out_channels=1)")
        self.model = model

    def forward(self, x, edge_index, batch=None):
        dense, mask = to_dense_batch(x, _batch(x, batch))
        if isinstance(self.model, _ABMIL):
            y = self.model(dense, mask)
        else:
            y = self.model(dense)
        y = y[0] if isinstance(y, tuple) else y
        return y.reshape(-1, 1), {}


def _abmil_cls():
    from torchmil.models import ABMIL

    return ABMIL


def _transmil_cls():
    from torchmil.models import TransMIL

    return TransMIL


class _ABMIL:  # marker for the mask-taking forward
    pass


def ABMILBaseline(in_channels, hidden_channels, out_channels, **_):
    cls = _abmil_cls()
    model = type("ABMIL", (cls, _ABMIL), {})(in_shape=(in_channels,), att_dim=hidden_channels, gated=True)
    return _TorchMIL(model, out_channels)


def TransMILBaseline(in_channels, hidden_channels, out_channels, **_):
    model = _transmil_cls()(in_shape=(in_channels,), att_dim=hidden_channels, n_layers=2, n_heads=4,
                            n_landmarks=hidden_channels // 2)
    return _TorchMIL(model, out_channels)


class PatchGCN(nn.Module):
    """PatchGCN: residual GENConv layers (DeepGCN res+), all layers' states concatenated, gated attention."""

    def __init__(self, in_channels, hidden_channels, out_channels, *, num_layers=3, **_):
        super().__init__()
        h = hidden_channels
        self.lin_in = nn.Linear(in_channels, h)
        self.layers = nn.ModuleList(
            DeepGCNLayer(GENConv(h, h, aggr="softmax", t=1.0, learn_t=True, num_layers=2, norm="layer"),
                         nn.LayerNorm(h), nn.ReLU(), block="res", dropout=0.0) for _ in range(num_layers))
        w = h * (num_layers + 1)
        self.proj = nn.Sequential(nn.Linear(w, h), nn.ReLU())
        self.pool = AttentionalAggregation(nn.Sequential(nn.Linear(h, h), nn.Tanh(), nn.Linear(h, 1)))
        self.head = _mlp(h, h, out_channels)

    def forward(self, x, edge_index, batch=None):
        h = self.lin_in(x)
        hs = [h]
        for layer in self.layers:
            h = layer(h, edge_index)
            hs.append(h)
        h = self.proj(torch.cat(hs, -1))
        return self.head(self.pool(h, _batch(x, batch))), {}


class KMeansRegionMIL(nn.Module):
    """Static regions: patches assigned to fixed k-means centroids; per-region mean features and
    proportions through an MLP (``set_centroids`` from training patches)."""

    def __init__(self, in_channels, hidden_channels, out_channels, *, num_regions=8, **_):
        super().__init__()
        self.num_regions = num_regions
        self.register_buffer("centroids", torch.zeros(num_regions, in_channels))
        self.mlp = _mlp(num_regions * (in_channels + 1), hidden_channels, out_channels)

    def set_centroids(self, centroids):
        self.centroids = torch.as_tensor(centroids, dtype=torch.float32)
        return self

    def forward(self, x, edge_index, batch=None):
        b = _batch(x, batch)
        S = torch.nn.functional.one_hot(torch.cdist(x, self.centroids).argmin(-1), self.num_regions).to(x.dtype)
        mass = scatter(S, b, dim=0, reduce="sum")
        z = torch.stack([scatter(S[:, r:r + 1] * x, b, dim=0, reduce="sum") for r in range(self.num_regions)], 1)
        z = z / mass.clamp(min=1).unsqueeze(-1)
        prop = mass / mass.sum(-1, keepdim=True)
        return self.mlp(torch.cat([z.flatten(1), prop], -1)), {}


class ConceptBottleneckMIL(nn.Module):
    """Concept-bottleneck MIL: each patch is reduced to its concept scores c_i (K); gated attention
    pooling over patches, then a linear read-out of the pooled concept vector."""

    def __init__(self, in_channels, hidden_channels, out_channels, *, concepts, **_):
        super().__init__()
        self.register_buffer("concepts", torch.as_tensor(concepts, dtype=torch.float32))
        k = self.concepts.shape[0]
        self.pool = AttentionalAggregation(nn.Sequential(nn.Linear(k, hidden_channels), nn.Tanh(),
                                                         nn.Linear(hidden_channels, 1)))
        self.head = nn.Linear(k, out_channels)

    def forward(self, x, edge_index, batch=None):
        c = concept_scores(x, self.concepts)
        return self.head(self.pool(c, _batch(x, batch))), {}


class ConceptEdgeMIL(nn.Module):
    """Strongest simple baseline with the same information: per slide, the share of edges joining
    concepts (k, l) (soft: mean of c_i c_jᵀ over edges, K² values) and the concept proportions (K),
    through an MLP. No regions, no evolution."""

    def __init__(self, in_channels, hidden_channels, out_channels, *, concepts, **_):
        super().__init__()
        self.register_buffer("concepts", torch.as_tensor(concepts, dtype=torch.float32))
        k = self.concepts.shape[0]
        self.norm = nn.LayerNorm(k * k + k)
        self.mlp = _mlp(k * k + k, hidden_channels, out_channels)

    def forward(self, x, edge_index, batch=None):
        b = _batch(x, batch)
        c = concept_scores(x, self.concepts)
        src, dst = edge_index
        pair = (c[src].unsqueeze(-1) * c[dst].unsqueeze(-2)).flatten(1)
        edges = scatter(pair, b[dst], dim=0, dim_size=int(b.max()) + 1, reduce="mean")
        prop = scatter(c, b, dim=0, reduce="mean")
        return self.mlp(self.norm(torch.cat([edges, prop], -1))), {}


BASELINES = {"meanpool": MeanPoolMIL, "abmil": ABMILBaseline, "transmil": TransMILBaseline,
             "patchgcn": PatchGCN, "kmeans_regions": KMeansRegionMIL, "concept_bottleneck": ConceptBottleneckMIL,
             "concept_edges": ConceptEdgeMIL}
