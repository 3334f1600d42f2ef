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


def _write_planetoid(folder, prefix="tiny", n=560, n_train=20, n_test=40, d=6, c=3, seed=0):
    """The Planetoid raw format (what Cora ships as): pickled scipy/numpy arrays, a dict graph, test.index."""
    import pickle

    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, c, n)
    feats = (rng.random((n, d)) < 0.3).astype(np.float32)
    onehot = np.eye(c)[labels]
    test_idx = np.arange(n - n_test, n)
    rng.shuffle(test_idx)  # test.index lists test nodes in file order, unsorted (as in Cora)
    n_all = n - n_test
    arrays = {"x": sp.csr_matrix(feats[:n_train]), "y": onehot[:n_train],
              "allx": sp.csr_matrix(feats[:n_all]), "ally": onehot[:n_all],
              "tx": sp.csr_matrix(feats[test_idx]), "ty": onehot[test_idx]}
    graph = {i: [] for i in range(n)}
    edges = set()
    for _ in range(3 * n):
        a, b = map(int, rng.integers(0, n, 2))
        if a != b:
            graph[a].append(b)
            graph[b].append(a)
            edges.add((min(a, b), max(a, b)))
    arrays["graph"] = graph
    folder.mkdir(parents=True, exist_ok=True)
    for name, obj in arrays.items():
        with open(folder / f"ind.{prefix}.{name}", "wb") as f:
            pickle.dump(obj, f)
    (folder / f"ind.{prefix}.test.index").write_text("\n".join(map(str, test_idx)) + "\n")
    return feats, labels, edges


def test_planetoid_raw_files_are_read_with_the_standard_split(tmp_path):
    from graphmuon.data import load_planetoid

    feats, labels, edges = _write_planetoid(tmp_path / "Tiny" / "raw")
    data = load_planetoid(tmp_path, "Tiny")
    assert torch.equal(data.x, torch.from_numpy(feats))  # test rows put back in node order
    assert torch.equal(data.y, torch.from_numpy(labels))
    got = {(min(a, b), max(a, b)) for a, b in data.edge_index.T.tolist()}
    assert got == edges
    assert int(data.train_mask.sum()) == 20 and int(data.val_mask.sum()) == 500 and int(data.test_mask.sum()) == 40
    assert load_planetoid(tmp_path / "Tiny" / "raw").num_nodes == 560  # the folder itself, name inferred


def test_planetoid_errors_name_what_is_missing(tmp_path):
    from graphmuon.data import load_planetoid

    with pytest.raises(FileNotFoundError, match="no Planetoid raw files"):
        load_planetoid(tmp_path)
    _write_planetoid(tmp_path)
    (tmp_path / "ind.tiny.graph").unlink()
    with pytest.raises(FileNotFoundError, match="ind.tiny.graph"):
        load_planetoid(tmp_path)


def test_edge_list_with_labels_and_features(tmp_path):
    from graphmuon.data import load_edge_list

    (tmp_path / "e.txt").write_text("# src dst\na b\nb c\nc,d\nd a\nbad\nd zz\n")
    (tmp_path / "y.txt").write_text("a 0\nb 1\nc 0\nd 1\nc 1\n")  # the second 'c' row is a duplicate: skipped
    (tmp_path / "x.txt").write_text("a 1 0\nb 0 1\nc 1 1\nd 0 0\ne 1\n")
    with pytest.warns(UserWarning, match=r"skipped 1 bad row\(s\) \(lines 6\)"):
        data = load_edge_list(tmp_path / "e.txt", tmp_path / "y.txt", tmp_path / "x.txt", train=0.5, val=0.25)
    assert data.num_nodes == 4 and data.y.tolist() == [0, 1, 0, 1]
    assert data.x.tolist() == [[1, 0], [0, 1], [1, 1], [0, 0]]
    got = {tuple(e) for e in data.edge_index.T.tolist()}
    assert got == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (3, 0), (0, 3)}
    assert int(data.train_mask.sum() + data.val_mask.sum() + data.test_mask.sum()) == 4
    bare = load_edge_list(tmp_path / "e.txt", tmp_path / "y.txt")
    assert bare.x.shape == (4, 1)
    (tmp_path / "x2.txt").write_text("a 1 nan\nb 0 1\n")
    with pytest.raises(ValueError, match="no \\(valid\\) row"), pytest.warns(UserWarning):
        load_edge_list(tmp_path / "e.txt", tmp_path / "y.txt", tmp_path / "x2.txt")
    with pytest.raises(FileNotFoundError, match="edges file not found"):
        load_edge_list(tmp_path / "nope.txt", tmp_path / "y.txt")


def test_cli_runs_on_a_users_edge_list(tmp_path):
    """data.kind=edge_list replaces the generated regimes by the user's graph (run in-process)."""
    import numpy as np
    from graphmuon.run import run

    from paperworks.hydra_glue import compose

    rng = np.random.default_rng(0)
    n = 90
    y = np.arange(n) % 3
    lines = [f"n{i} n{j}" for i in range(n) for j in range(i + 1, n) if (y[i] == y[j]) and rng.random() < 0.1]
    (tmp_path / "e.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "y.txt").write_text("\n".join(f"n{i} c{y[i]}" for i in range(n)) + "\n")
    (tmp_path / "x.txt").write_text("\n".join(f"n{i} " + " ".join(f"{v:.3f}" for v in rng.normal(size=4) + y[i])
                                              for i in range(n)) + "\n")
    cfg = compose("graphmuon", ["experiment=smoke", "data.kind=edge_list", f"data.edges={tmp_path / 'e.txt'}",
                                f"data.labels={tmp_path / 'y.txt'}", f"data.features={tmp_path / 'x.txt'}",
                                "data.name=mine", "step_bench.widths=[]"])
    out = run(cfg)
    assert set(out["extra"]["regimes"]) == {"mine"}
    ids = {c.id for c in out["claims"]}
    assert {"speedup_vs_adamw_mine", "speedup_vs_muon_mine", "graphmuon_window_wider_mine"} <= ids


def test_run_reads_planetoid_by_path(tmp_path):
    from graphmuon.run import run

    from paperworks.hydra_glue import compose

    _write_planetoid(tmp_path / "raw", prefix="cora")
    cfg = compose("graphmuon", ["experiment=smoke", "data.kind=planetoid", f"data.root={tmp_path}",
                                "step_bench.widths=[]", "tune_seeds=1", "seeds=2"])
    out = run(cfg)
    assert set(out["extra"]["regimes"]) == {"planetoid"}
    assert out["extra"]["regimes"]["planetoid"]["adamw"]["seeds"] == 2
