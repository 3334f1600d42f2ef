"""The subgraph encoder and the unified subgraph readout.

A node is represented by its ``k``-hop ego-subgraph and a graph by itself; one readout (the mean of
the encoder's node embeddings over the subgraph's nodes) pools both, so node and graph clustering share
prototypes and head. Inferred from the abstract ("unified subgraph prototypes"); no paper text is public.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch_geometric.nn import GCNConv, GINConv, global_mean_pool
from torch_geometric.utils import scatter

from paperworks.utils import check_int

CONVS = ("gcn", "gin")


class SubgraphEncoder(nn.Module):
    r"""A ``num_layers``-layer GCN or GIN with PReLU activations (the DGI encoder).

    GCN layer: :math:`H' = \sigma(\hat D^{-1/2} (A + I) \hat D^{-1/2} H W)` (``GCNConv``);
    GIN layer: :math:`H' = \sigma(\mathrm{MLP}((1 + \epsilon) H + A H))` (``GINConv``, 2-layer MLP).

    Args:
        in_channels: input width ``F``.
        hidden_channels: embedding width ``d`` (64 in the paper miniature).
        conv: ``"gcn"`` or ``"gin"``.
        num_layers: number of message-passing layers (2).

    Shapes:
        ``forward(x [n, F], edge_index [2, E])`` → node embeddings ``[n, d]``;
        with ``batch [n]`` → one mean-pooled embedding per graph ``[B, d]``.
    """

    def __init__(self, in_channels: int, hidden_channels: int, *, conv: str = "gcn", num_layers: int = 2):
        super().__init__()
        self.in_channels = check_int(in_channels, "in_channels")
        self.hidden_channels = check_int(hidden_channels, "hidden_channels")
        self.num_layers = check_int(num_layers, "num_layers")
        if conv not in CONVS:
            raise ValueError(f"conv must be one of {CONVS}, got {conv!r}")
        self.conv = conv
        self.convs = nn.ModuleList()
        self.acts = nn.ModuleList()
        for i in range(self.num_layers):
            c_in = self.in_channels if i == 0 else self.hidden_channels
            if conv == "gcn":
                self.convs.append(GCNConv(c_in, self.hidden_channels, cached=False))
            else:
                mlp = nn.Sequential(nn.Linear(c_in, self.hidden_channels), nn.ReLU(),
                                    nn.Linear(self.hidden_channels, self.hidden_channels))
                self.convs.append(GINConv(mlp, train_eps=True))
            self.acts.append(nn.PReLU(self.hidden_channels))

    def reset_parameters(self) -> None:
        for c, a in zip(self.convs, self.acts):
            c.reset_parameters()
            a.reset_parameters()

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        if x.dim() != 2 or x.size(1) != self.in_channels:
            raise ValueError(f"x must have shape [n, {self.in_channels}], got {tuple(x.shape)}")
        h = x
        for conv, act in zip(self.convs, self.acts):
            h = act(conv(h, edge_index))
        return h if batch is None else global_mean_pool(h, batch)


def ego_pairs(edge_index: torch.Tensor, num_nodes: int, hops: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Members of every node's ``hops``-hop ego-subgraph, as ``(member, center)`` index pairs.

    The same node sets as ``torch_geometric.utils.k_hop_subgraph(center, hops, edge_index)`` for each
    center on an undirected graph, computed for all centers at once by a boolean power of ``A + I``.
    """
    hops = check_int(hops, "hops", minimum=0)
    ei = edge_index.cpu().numpy()
    a = sp.coo_matrix((np.ones(ei.shape[1], dtype=np.float32), (ei[0], ei[1])), shape=(num_nodes, num_nodes)).tocsr()
    a = ((a + a.T + sp.identity(num_nodes, format="csr", dtype=np.float32)) > 0).astype(np.float32)
    reach = sp.identity(num_nodes, format="csr", dtype=np.float32)
    for _ in range(hops):
        reach = ((reach @ a) > 0).astype(np.float32)
    reach = reach.tocoo()
    return torch.as_tensor(reach.col, dtype=torch.long), torch.as_tensor(reach.row, dtype=torch.long)


def subgraph_readout(h: torch.Tensor, member: torch.Tensor, center: torch.Tensor, num_units: int) -> torch.Tensor:
    """Mean of node embeddings ``h[member]`` per unit ``center``: ``[num_units, d]``."""
    return scatter(h[member], center, dim=0, dim_size=num_units, reduce="mean")
