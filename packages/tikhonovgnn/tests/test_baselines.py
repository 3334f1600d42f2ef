import pytest
import torch
from tikhonovgnn import BASELINES, Baseline, TikhonovGNN
from tikhonovgnn.baselines import make_model
from torch_geometric.data import Batch, Data


@pytest.fixture
def batch(gen, connected):
    return Batch.from_data_list([Data(x=torch.randn(6, 4, generator=gen), edge_index=connected(6, gen)),
                                 Data(x=torch.randn(5, 4, generator=gen), edge_index=connected(5, gen))])


@pytest.mark.parametrize("name", BASELINES)
@pytest.mark.parametrize("pool", ["sum", "mean", "max"])
def test_graph_baselines_shapes_and_batch_independence(name, pool, batch):
    torch.manual_seed(0)
    m = Baseline(name, 4, 8, 3, num_layers=2, pool=pool).eval()
    out = m(batch.x, batch.edge_index, batch.batch)
    assert out.shape == (2, 3)
    g = batch.get_example(1)
    torch.testing.assert_close(m(g.x, g.edge_index)[0], out[1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", BASELINES)
def test_node_baselines_shapes(name, batch):
    assert Baseline(name, 4, 8, 3, task="node")(batch.x, batch.edge_index).shape == (11, 3)


def test_mlp_ignores_topology(batch):
    m = Baseline("mlp", 4, 8, 3, task="node")
    torch.testing.assert_close(m(batch.x, batch.edge_index), m(batch.x, torch.empty(2, 0, dtype=torch.long)))


def test_make_model_builds_tikhonov():
    assert isinstance(make_model("tikhonov", 4, 8, 3, tikhonov={"degree": 2}), TikhonovGNN)


@pytest.mark.parametrize("kw, match", [({"name": "sage"}, "name"), ({"task": "edge"}, "task"), ({"pool": "min"}, "pool")])
def test_bad_arguments(kw, match):
    args = {"name": "gcn", "task": "graph", "pool": "sum", **kw}
    with pytest.raises(ValueError, match=match):
        Baseline(args["name"], 4, 8, 3, task=args["task"], pool=args["pool"])


def test_early_stopping_keeps_the_best_validation_weights():
    import numpy as np
    from tikhonovgnn.baselines import make_model
    from tikhonovgnn.data import colour_topology_graphs
    from tikhonovgnn.train import graph_accuracy, graph_loss, train_graph_classifier

    graphs = colour_topology_graphs(40, np.random.default_rng(0), min_nodes=8, max_nodes=10)
    torch.manual_seed(0)
    model = make_model("gin", 5, 8, 3, task="graph", num_layers=2)
    log = {}
    train_graph_classifier(model, graphs[:24], epochs=30, lr=0.05, val=graphs[24:], patience=2, log=log)
    assert log["epochs_run"] <= 30 and log["epochs_run"] - log["best_epoch"] <= 2
    # the restored weights are the best ones
    assert graph_loss(model, graphs[24:]) == pytest.approx(log["best_val_loss"], rel=1e-6)
    assert graph_accuracy(model, graphs[24:]) == log["best_val_acc"]
    # graph_loss is the mean cross-entropy
    from torch_geometric.data import Batch as B

    b = B.from_data_list(graphs[24:])
    ref = float(torch.nn.functional.cross_entropy(model(b.x, b.edge_index, b.batch), b.y))
    assert graph_loss(model, graphs[24:], batch_size=5) == pytest.approx(ref, rel=1e-5)
