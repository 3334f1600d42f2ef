import networkx as nx
import numpy as np
import pytest
import torch
from tikhonovgnn.data import colour_topology_graphs, csbm, edge_homophily, motif_graphs, random_graph, ring_graphs
from torch_geometric.utils import to_networkx


def test_colour_topology_labels_follow_the_colour_distance():
    graphs = colour_topology_graphs(30, np.random.default_rng(0), min_nodes=15, max_nodes=25)
    labels = [int(g.y) for g in graphs]
    assert sorted(set(labels)) == [0, 1, 2] and labels.count(0) == 10
    for g in graphs:
        G = to_networkx(g, to_undirected=True)
        assert nx.is_connected(G) and 15 <= g.num_nodes <= 25
        colours = g.x.argmax(1)
        assert (g.x.sum(1) == 1).all()
        assert int((colours == 0).sum()) == 1 and int((colours == 1).sum()) == 1  # same histogram in every class
        u, v = int((colours == 0).nonzero()), int((colours == 1).nonzero())
        d = nx.shortest_path_length(G, u, v)
        assert (d == int(g.y) + 1) if int(g.y) < 2 else d >= 3


def test_motif_graphs_have_ground_truth_masks():
    graphs = motif_graphs(6, 0, base_nodes=10)
    assert sorted(int(g.y) for g in graphs) == [0, 0, 0, 1, 1, 1]
    for g in graphs:
        assert g.num_nodes == 15 and int(g.node_mask.sum()) == 5
        motif = g.node_mask.bool().nonzero().view(-1).tolist()
        G = to_networkx(g, to_undirected=True).subgraph(motif)
        # house: 6 edges; 5-cycle: 5 edges
        assert G.number_of_edges() == (6 if int(g.y) == 0 else 5)


@pytest.mark.parametrize("h", [0.1, 0.5, 0.9])
def test_csbm_hits_the_homophily(h):
    g = csbm(600, h, np.random.default_rng(1), avg_degree=10)
    assert abs(edge_homophily(g.edge_index, g.y) - h) < 0.06
    assert (g.train_mask ^ g.test_mask).all()


def test_ring_task_puts_label_out_of_two_hop_reach():
    for ring in (False, True):
        g = ring_graphs(4, np.random.default_rng(0), length=10, ring=ring)[0]
        G = to_networkx(g, to_undirected=True)
        s, t = int(g.x[:, 2].nonzero()), int(g.target_mask.nonzero())
        assert nx.shortest_path_length(G, s, t) == (5 if ring else 9)
        assert g.x[s, :2].sum() == 1 and g.x[t, :2].sum() == 0


def test_random_graph_size():
    g = random_graph(500, 8, np.random.default_rng(0))
    assert g.num_nodes == 500 and 3000 < g.edge_index.size(1) <= 4000 and (g.edge_index[0] != g.edge_index[1]).all()


@pytest.mark.parametrize("call", [
    lambda: colour_topology_graphs(0, np.random.default_rng(0)),
    lambda: csbm(10, 1.5, np.random.default_rng(0)),
    lambda: ring_graphs(3, np.random.default_rng(0), length=2),
    lambda: motif_graphs(2, 0, base_nodes=0),
])
def test_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


def test_generators_are_seeded():
    a = colour_topology_graphs(6, np.random.default_rng(3), min_nodes=10, max_nodes=12)
    b = colour_topology_graphs(6, np.random.default_rng(3), min_nodes=10, max_nodes=12)
    assert all(torch.equal(x.edge_index, y.edge_index) and torch.equal(x.x, y.x) for x, y in zip(a, b))
