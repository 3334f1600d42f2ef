import numpy as np
import pytest
import torch
from gfmuc import csbm, load_graph, motif_graphs
from gfmuc.data import check_graph, svd_features
from torch_geometric.data import Data
from torch_geometric.utils import homophily


@pytest.mark.parametrize("h,k", [(0.9, 4), (0.5, 3), (0.2, 5)])
def test_csbm_hits_planted_homophily(h, k):
    g = csbm(1500, k, homophily=h, feature_dim=8, snr=1.0, seed=0)
    assert abs(homophily(g.edge_index, g.y, method="edge") - h) < 0.03
    assert g.x.shape == (1500, 8) and g.y.unique().numel() == k
    deg = g.edge_index.size(1) / 1500
    assert 8 < deg < 12  # avg_degree 10


def test_csbm_seeded_and_feature_laws():
    a = csbm(100, 2, homophily=0.7, feature_dim=4, snr=1.0, seed=3, feature_law="student")
    b = csbm(100, 2, homophily=0.7, feature_dim=4, snr=1.0, seed=3, feature_law="student")
    assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
    lap = csbm(1500, 2, homophily=0.7, feature_dim=4, snr=0.0, seed=1, avg_degree=2.0, feature_law="laplace")
    assert lap.x.var().item() == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("kw,err", [
    ({"homophily": 1.5}, "homophily must be <= 1"), ({"homophily": float("nan")}, "homophily must be finite"),
    ({"snr": "2"}, "snr must be a real"), ({"feature_law": "cauchy"}, "feature_law must be one of")])
def test_csbm_bad_input(kw, err):
    args = {"homophily": 0.8, "feature_dim": 4, "snr": 1.0} | kw
    with pytest.raises((ValueError, TypeError), match=err):
        csbm(100, 3, **args)


def test_motif_graphs_labels():
    gs = motif_graphs(9, base_nodes=8, seed=0)
    assert sorted(int(g.y) for g in gs) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    sizes = {int(g.y): g.num_nodes for g in gs}
    assert sizes == {0: 13, 1: 14, 2: 17}  # house 5, cycle 6, grid 9 nodes on an 8-node BA graph


def test_check_graph_errors_and_isolated_count():
    ei = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="no node features x"):
        check_graph(Data(edge_index=ei, num_nodes=3))
    with pytest.raises(ValueError, match="outside"):
        check_graph(Data(x=torch.zeros(2, 2), edge_index=torch.tensor([[0, 2], [2, 0]])))
    with pytest.raises(ValueError, match="NaN or inf"):
        check_graph(Data(x=torch.tensor([[0.0], [float("nan")]]), edge_index=ei))
    assert check_graph(Data(x=torch.zeros(4, 2), edge_index=ei)) == 2


def test_svd_features_width_and_padding(rng):
    x = torch.tensor(rng.normal(size=(50, 10)), dtype=torch.float)
    z = svd_features(x, 4)
    assert z.shape == (50, 4)
    assert z.std(0, unbiased=False)[0] == pytest.approx(1.0, rel=1e-3)  # first component scaled to unit std
    pad = svd_features(x, 16)
    assert pad.shape == (50, 16) and torch.all(pad[:, 10:] == 0)


def test_load_edge_list_skips_bad_rows(tmp_path):
    p = tmp_path / "g.edges"
    p.write_text("# toy\n0 1\n1 2\nfoo bar\n2 3\n3\n")
    f = tmp_path / "x.csv"
    f.write_text("1,0\n0,1\nnan,1\n1,1\n")
    with pytest.raises(ValueError, match="3 valid feature rows but the edges name 4"):
        load_graph(p, features=f)
    f.write_text("1,0\n0,1\n1,1\n0,0\n")
    data, rep = load_graph(p, features=f)
    assert rep["bad_edge_rows"] == [4, 6]
    assert data.num_nodes == 4 and data.edge_index.size(1) == 6  # symmetrised


def test_load_npz(tmp_path):
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=np.array([[0, 1], [1, 0]]), x=np.ones((3, 2)), y=np.array([0, 1, 1]))
    data, _ = load_graph(p)
    assert data.num_nodes == 3 and data.y.tolist() == [0, 1, 1]
    with pytest.raises(FileNotFoundError, match="data.path"):
        load_graph(tmp_path / "missing.txt")
