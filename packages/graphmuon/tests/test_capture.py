import pytest
import torch
from graphmuon import GraphMuon, Recorder, attach, gcn_propagated_input, graph_weights
from graphmuon.data import csbm, with_sparse_adjacency
from torch import nn
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv, SGConv


def test_gcn_capture_is_propagated_input_not_raw(small_graph, gen, dense_adj):
    ei, n = small_graph
    h = torch.randn(n, 5, generator=gen)
    conv = GCNConv(5, 3)
    x = gcn_propagated_input(conv, (h, ei), {})
    a_hat = dense_adj(ei, n)
    torch.testing.assert_close(x, a_hat @ h, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(x, h)
    # and the layer really is Â (H Wᵀ) + b = X Wᵀ + b with that X
    torch.testing.assert_close(conv(h, ei), x @ conv.lin.weight.T + conv.bias, atol=1e-5, rtol=1e-5)


def test_hooks_feed_the_covariance_of_ah(small_graph, gen, dense_adj):
    ei, n = small_graph
    h = torch.randn(n, 5, generator=gen)
    conv = GCNConv(5, 3)
    opt = GraphMuon(conv.parameters(), lr=0.01)
    attach(conv, opt)
    conv(h, ei)
    x = dense_adj(ei, n) @ h
    torch.testing.assert_close(opt.state[conv.lin.weight]["pending_xtx"] / n, x.T @ x / n, atol=1e-5, rtol=1e-5)


def test_sparse_adjacency_gives_the_same_capture(gen):
    data = csbm(0, n=60, classes=3, features=4, degree=6)
    sp = with_sparse_adjacency(data)
    conv = GCNConv(4, 2)
    torch.testing.assert_close(gcn_propagated_input(conv, (data.x, data.edge_index), {}),
                               gcn_propagated_input(conv, (sp.x, sp.adj_t), {}), atol=1e-5, rtol=1e-5)


def test_sgconv_and_sage_and_gin_captures(small_graph, gen, dense_adj):
    ei, n = small_graph
    h = torch.randn(n, 4, generator=gen)
    a = torch.zeros(n, n)
    a[ei[1], ei[0]] = 1.0
    cases = {
        "sg": (SGConv(4, 3, K=3), {"sg.lin.weight": torch.linalg.matrix_power(dense_adj(ei, n), 3) @ h}),
        "sage": (SAGEConv(4, 3), {"sage.lin_l.weight": (a @ h) / a.sum(1, keepdim=True).clamp(min=1),
                                  "sage.lin_r.weight": h}),
        "gin": (GINConv(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)), eps=0.5, train_eps=False),
                {"gin.nn.0.weight": 1.5 * h + a @ h}),
    }
    for name, (layer, expected) in cases.items():
        model = nn.ModuleDict({name: layer})
        rec = Recorder(model)
        with rec:
            layer(h, ei)
        for key, ref in expected.items():
            torch.testing.assert_close(rec.inputs[key], ref, atol=1e-5, rtol=1e-5)
        rec.remove()


def test_unsupported_graph_layer_is_an_error_naming_it():
    model = nn.ModuleDict({"att": GATConv(4, 3)})
    with pytest.raises(ValueError, match="'att' \\(GATConv\\) has no propagated-input capture"):
        graph_weights(model)
    opt = GraphMuon(model.parameters())
    with pytest.raises(ValueError, match="no graph weights"):
        attach(model, opt, skip=["att"])


def test_user_registered_layer(small_graph, gen):
    ei, n = small_graph
    model = nn.ModuleDict({"att": GATConv(4, 3, heads=1)})
    opt = GraphMuon(model.parameters(), lr=0.01)
    h = torch.randn(n, 4, generator=gen)
    opt.register(model["att"].lin.weight, model["att"], lambda m, args, kw: args[0], name="att.lin.weight")
    model["att"](h, ei).sum().backward()
    opt.step()
    assert "sigma" in opt.state[model["att"].lin.weight]
    with pytest.raises(TypeError, match="optimizer must be a graphmuon.GraphMuon"):
        attach(model, torch.optim.SGD(model.parameters(), lr=0.1))
