import pytest
import torch
from graphmuon.data import csbm, graph_classification, identity_graph


@pytest.mark.parametrize("h,deg", [(0.8, 10.0), (0.2, 30.0)])
def test_csbm_has_requested_homophily_and_degree(h, deg):
    d = csbm(1, n=600, classes=3, features=8, homophily=h, degree=deg)
    src, dst = d.edge_index
    assert abs((d.y[src] == d.y[dst]).float().mean() - h) < 0.05
    assert abs(d.edge_index.size(1) / d.num_nodes - deg) < 0.1 * deg
    masks = d.train_mask.int() + d.val_mask.int() + d.test_mask.int()
    assert torch.all(masks == 1) and d.x.shape == (600, 8)


def test_csbm_is_reproducible_and_seeded():
    assert torch.equal(csbm(3, n=100).x, csbm(3, n=100).x)
    assert not torch.equal(csbm(3, n=100).x, csbm(4, n=100).x)


def test_identity_graph_has_no_edges():
    d = csbm(0, n=100)
    e = identity_graph(d)
    assert e.edge_index.size(1) == 0 and torch.equal(e.x, d.x) and d.edge_index.size(1) > 0


def test_graph_classification_is_balanced():
    b = graph_classification(0, graphs=40, min_nodes=10, max_nodes=14)
    assert b.num_graphs == 40
    assert torch.bincount(b.y).tolist() == [10, 10, 10, 10]
    assert b.x.size(1) == 11 and torch.all(b.x.sum(1) == 1)
    assert int(b.train_mask.sum() + b.val_mask.sum() + b.test_mask.sum()) == 40


def test_bad_inputs():
    with pytest.raises(ValueError, match="homophily"):
        csbm(0, n=50, homophily=1.5)
    with pytest.raises(ValueError, match="degree"):
        csbm(0, n=50, degree=0)
    with pytest.raises(ValueError, match="graphs"):
        graph_classification(0, graphs=2)
