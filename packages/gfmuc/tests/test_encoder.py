import pytest
import torch
from gfmuc import SubgraphEncoder, csbm
from gfmuc.encoder import ego_pairs, subgraph_readout
from torch_geometric.nn import global_mean_pool
from torch_geometric.utils import k_hop_subgraph, to_dense_adj


def test_gcn_matches_dense_reference():
    torch.manual_seed(0)
    g = csbm(40, 2, homophily=0.7, feature_dim=5, snr=1.0, seed=0, avg_degree=4.0)
    enc = SubgraphEncoder(5, 8, conv="gcn").double()
    x = g.x.double()
    a = to_dense_adj(g.edge_index, max_num_nodes=40)[0].double() + torch.eye(40, dtype=torch.double)
    dinv = a.sum(1).pow(-0.5)
    a_hat = dinv[:, None] * a * dinv[None, :]
    h = x
    for conv, act in zip(enc.convs, enc.acts):
        h = act(a_hat @ h @ conv.lin.weight.T + conv.bias)
    torch.testing.assert_close(enc(x, g.edge_index), h)


def test_graph_readout_is_mean_pool_and_gin_shapes():
    g = csbm(30, 3, homophily=0.8, feature_dim=4, snr=1.0, seed=1, avg_degree=4.0)
    batch = torch.arange(30) // 10
    enc = SubgraphEncoder(4, 6, conv="gin")
    torch.testing.assert_close(enc(g.x, g.edge_index, batch), global_mean_pool(enc(g.x, g.edge_index), batch))
    assert enc(g.x, g.edge_index, batch).shape == (3, 6)
    enc.reset_parameters()


@pytest.mark.parametrize("hops", [0, 1, 2, 3])
def test_ego_pairs_match_k_hop_subgraph(hops):
    g = csbm(50, 2, homophily=0.6, feature_dim=2, snr=1.0, seed=2, avg_degree=3.0)
    member, center = ego_pairs(g.edge_index, 50, hops)
    for c in range(50):
        subset, *_ = k_hop_subgraph(c, hops, g.edge_index, num_nodes=50)
        assert sorted(member[center == c].tolist()) == sorted(subset.tolist())
    h = torch.randn(50, 3)
    z = subgraph_readout(h, member, center, 50)
    subset, *_ = k_hop_subgraph(7, hops, g.edge_index, num_nodes=50)
    torch.testing.assert_close(z[7], h[subset].mean(0))


def test_encoder_bad_arguments():
    with pytest.raises(ValueError, match="conv must be"):
        SubgraphEncoder(3, 4, conv="gat")
    with pytest.raises(TypeError, match="hidden_channels"):
        SubgraphEncoder(3, "64")
    with pytest.raises(ValueError, match=r"x must have shape \[n, 3\]"):
        SubgraphEncoder(3, 4)(torch.zeros(5, 2), torch.zeros(2, 0, dtype=torch.long))
