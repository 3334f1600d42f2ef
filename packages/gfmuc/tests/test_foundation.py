import numpy as np
import pytest
import torch
from gfmuc import GFMUC, clustering_scores, csbm, motif_graphs
from gfmuc.baselines import dgi_kmeans, dmon, kmeans_features, spectral
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from torch_geometric.data import Data


@pytest.fixture(scope="session")
def finetuned(pretrained, target):
    return pretrained.fit_predict(target, 3)


def test_beats_random_on_planted_csbm(finetuned, target):
    nmi = clustering_scores(target.y.numpy(), finetuned)["nmi"]
    rand = clustering_scores(target.y.numpy(), np.random.default_rng(0).integers(0, 3, 200))["nmi"]
    assert nmi > rand + 0.2


def test_poisoned_labels_leave_predictions_identical(pretrained, target, finetuned):
    poisoned = Data(x=target.x, edge_index=target.edge_index, y=torch.randint(0, 50, (200,)))
    m = clone(pretrained)  # same params, then the same pre-training, then fine-tune on the poisoned copy
    m.__dict__.update({k: v for k, v in pretrained.__dict__.items() if k.endswith("_")})
    np.testing.assert_array_equal(m.fit_predict(poisoned, 3), finetuned)
    del target.y  # also runs with no labels at all
    try:
        np.testing.assert_array_equal(m.fit_predict(target, 3), finetuned)
    finally:
        target.y = torch.repeat_interleave(torch.arange(3), torch.tensor([67, 67, 66]))


def test_save_load_round_trip(pretrained, target, tmp_path, finetuned):
    pretrained.finetune(target, 3)
    path = pretrained.save(tmp_path / "m.pt")
    loaded = GFMUC.load(path)
    np.testing.assert_array_equal(loaded.predict(target), finetuned)
    assert loaded.get_params() == pretrained.get_params()
    # a pre-trained-only model reloads and fine-tunes without any source
    again = GFMUC.load(path).fit_predict(target, 3)
    np.testing.assert_array_equal(again, finetuned)
    with pytest.raises(FileNotFoundError):
        GFMUC.load(tmp_path / "none.pt")


def test_graph_level_and_ot(pretrained):
    graphs = motif_graphs(9, base_nodes=8, seed=11)
    pred = pretrained.fit_predict(graphs, 3)
    assert pred.shape == (9,)
    m = clone(pretrained).set_params(align="ot")
    m.__dict__.update({k: v for k, v in pretrained.__dict__.items() if k.endswith("_")})
    assert m.fit_predict(graphs, 3).shape == (9,)
    assert pretrained.prototypes_.shape == (6, 16)
    torch.testing.assert_close(pretrained.prototype_weights_.sum(), torch.tensor(1.0))


def test_errors(pretrained, target):
    with pytest.raises(NotFittedError, match="call pretrain"):
        GFMUC().finetune(target, 3)
    with pytest.raises(ValueError, match="sources is empty"):
        GFMUC().pretrain([])
    with pytest.raises(ValueError, match="n_clusters must be >= 2"):
        pretrained.finetune(target, 1)
    with pytest.raises(ValueError, match="n_clusters=500 exceeds"):
        pretrained.finetune(target, 500)
    with pytest.raises(ValueError, match="no node features x"):
        pretrained.finetune(Data(edge_index=target.edge_index, num_nodes=200), 3)
    with pytest.raises(ValueError, match="NaN or inf"):
        pretrained.finetune(Data(x=torch.full((4, 2), float("nan")), edge_index=torch.zeros(2, 0, dtype=torch.long)), 2)
    with pytest.raises(TypeError, match="sources must be"):
        GFMUC().pretrain(torch.zeros(3))


@pytest.mark.parametrize("kw,err", [({"align": "kl"}, "align must be"), ({"confidence": 0.0}, "confidence must be >"),
                                    ({"num_prototypes": 1}, "num_prototypes must be 0"), ({"lr": float("inf")}, "lr must be finite"),
                                    ({"hops": "2"}, "hops must be an integer"), ({"encoder": "gat"}, "encoder must be")])
def test_bad_params_at_construction(kw, err):
    with pytest.raises((ValueError, TypeError), match=err):
        GFMUC(**kw)


def test_isolated_nodes_kept_and_counted(pretrained):
    g = csbm(60, 2, homophily=0.8, feature_dim=8, snr=2.0, seed=5, avg_degree=3.0)
    x = torch.cat([g.x, torch.randn(3, 8)])
    pred = pretrained.fit_predict(Data(x=x, edge_index=g.edge_index), 2)
    assert pred.shape == (63,)
    assert pretrained.isolated_nodes_target_ >= 3


def test_baselines_run_and_spectral_separates_cliques(small):
    ei = torch.tensor([(i, j) for b in (0, 5) for i in range(b, b + 5) for j in range(b, b + 5) if i != j]).t()
    g = Data(x=torch.randn(10, 3), edge_index=ei)
    p = spectral(g, 2)
    assert clustering_scores([0] * 5 + [1] * 5, p)["acc"] == 1.0
    t = csbm(120, 3, homophily=0.9, feature_dim=8, snr=3.0, seed=6)
    assert dmon(t, 3, epochs=5).shape == (120,)
    assert kmeans_features(motif_graphs(6, base_nodes=8, seed=0), 3).shape == (6,)
    assert dgi_kmeans(t, 3, seed=0, **{**small, "pretrain_epochs": 3}).shape == (120,)
