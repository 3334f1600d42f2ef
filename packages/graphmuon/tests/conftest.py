import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def dense_gcn_adjacency(edge_index, n):
    """D̃^(-1/2) (A + I) D̃^(-1/2) built densely: the independent reference for GCNConv's propagation."""
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1.0
    a = a + torch.eye(n)
    d = a.sum(1).rsqrt()
    return d[:, None] * a * d[None, :]


@pytest.fixture
def dense_adj():
    return dense_gcn_adjacency


@pytest.fixture
def small_graph():
    from torch_geometric.utils import erdos_renyi_graph

    torch.manual_seed(0)
    n = 40
    return erdos_renyi_graph(n, 0.15), n
