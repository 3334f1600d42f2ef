import networkx as nx
import numpy as np
import pytest
from consensusgame import graphs


def test_edge_list_symmetric_and_deduplicated():
    g = graphs.from_edge_list([[0, 1], [1, 0], [1, 2], [2, 2]], n_nodes=4)
    assert g.n_edges == 2 and g.n_nodes == 4
    assert sorted(zip(g.senders.tolist(), g.receivers.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    np.testing.assert_array_equal(g.degree(), [1, 2, 1, 0])


def test_edge_list_ids_out_of_range():
    with pytest.raises(ValueError, match="outside"):
        graphs.from_edge_list([[0, 5]], n_nodes=3)
    with pytest.raises(ValueError, match="outside"):
        graphs.from_edge_list([[-1, 0]], n_nodes=3)
    with pytest.raises(ValueError, match="shape"):
        graphs.from_edge_list([0, 1, 2])


def test_load_edge_list_skips_and_counts_bad_rows(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("# comment\n0 1\n1,2\nfoo bar\n3\n2 3 extra\n", encoding="utf-8")
    g, skipped = graphs.load_edge_list(f)
    assert skipped == 2 and g.n_nodes == 4 and g.n_edges == 3


def test_real_graphs_ship_offline():
    sizes = {"karate": 34, "les_miserables": 77, "florentine": 15, "davis": 32}
    for name, n in sizes.items():
        assert graphs.real_graph(name).n_nodes == n
    with pytest.raises(ValueError, match="name"):
        graphs.real_graph("bluesky")


def test_ba_and_networkx_agree():
    g = graphs.barabasi_albert(30, 2, seed=1)
    ref = nx.barabasi_albert_graph(30, 2, seed=1)
    assert g.n_edges == ref.number_of_edges()
    np.testing.assert_array_equal(g.degree(), [d for _, d in sorted(ref.degree())])
    with pytest.raises(ValueError, match="m must be"):
        graphs.barabasi_albert(3, 3)


def test_groups_degree_and_features():
    g = graphs.dynamic_groups(12, 5)
    assert g.n_groups == 3
    np.testing.assert_array_equal(np.sort(g.degree()), [1, 1] + [4] * 10)
    f = graphs.topology_features(graphs.real_graph("karate"))
    assert f.shape == (34, 4) and np.allclose(f.mean(0), 0, atol=1e-9)
    with pytest.raises(ValueError, match="static"):
        graphs.topology_features(g)


def test_load_engagement(tmp_path):
    from consensusgame.attention import engagement_accuracy
    from consensusgame.graphs import load_engagement

    f = tmp_path / "eng.csv"
    f.write_text("node,engagement\n# a comment\n2, 30\n0,10\n1 , 20.5\n3,10\n")
    values, skipped = load_engagement(f, 4)
    assert skipped == 1 and values.tolist() == [10.0, 20.5, 30.0, 10.0]
    q = engagement_accuracy(values)
    assert q.tolist() == pytest.approx([0.5 + 0.4 * 0.5 / 3, 0.5 + 0.4 * 2 / 3, 0.9, 0.5 + 0.4 * 0.5 / 3])
    for text, match in [("0 1\n1 2\n", "2 of 3 nodes|1 of 3 nodes"), ("0 1\n0 2\n1 1\n2 1\n", "twice"),
                        ("0 1\n1 1\n2 1\n3 1\n", "outside"), ("0 nan\n1 1\n2 1\n", "non-finite")]:
        f.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_engagement(f, 3)
    with pytest.raises(ValueError, match="engagement"):
        engagement_accuracy([1.0])
