import h5py
import numpy as np
import pytest
import torch
from tmevolve import load_bags, make_bag, patch_graph


def _brute(coords, step, k=8):
    edges = set()
    for i, a in enumerate(coords):
        for j, b in enumerate(coords):
            dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
            if i != j and max(dx, dy) <= step * 1.0001 and (k == 8 or min(dx, dy) < 1e-9):
                edges.add((j, i))
    return edges


@pytest.mark.parametrize("k", [4, 8])
def test_patch_graph_matches_brute_force_with_holes_size_and_offset(rng, k):
    ii, jj = np.divmod(np.arange(64), 8)
    keep = rng.random(64) > 0.25
    coords = np.stack([ii, jj], 1)[keep] * 224.0 + np.array([37.0, 1000.0])
    ei = patch_graph(coords, k=k)
    assert set(map(tuple, ei.T.tolist())) == _brute(coords, 224.0, k)
    assert ei.shape[1] == len(_brute(coords, 224.0, k))


def test_patch_graph_interior_has_8_neighbours():
    ii, jj = np.divmod(np.arange(25), 5)
    ei = patch_graph(np.stack([ii, jj], 1) * 512)
    deg = torch.bincount(ei[1], minlength=25)
    assert deg[12] == 8 and deg[0] == 3


@pytest.mark.parametrize("coords,match", [
    (np.zeros((4, 3)), r"\(N, 2\)"), (np.array([[0, 0], [0, 0], [1, 1]]), "duplicate"),
    (np.array([[0.0, 0.0]]), "at least 2"), (np.array([[0.0, np.nan], [1, 1]]), "finite"),
])
def test_patch_graph_bad_coords(coords, match):
    with pytest.raises(ValueError, match=match):
        patch_graph(coords)


def test_make_bag_errors():
    with pytest.raises(ValueError, match="rows but the features have"):
        make_bag(np.zeros((5, 4)), np.zeros((4, 2)))
    f = np.ones((3, 4))
    f[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make_bag(f, np.array([[0, 0], [0, 1], [1, 0]]))


def test_load_bags_reads_h5_pt_npz_and_skips_bad_files(tmp_path, rng):
    coords = np.stack(np.divmod(np.arange(9), 3), 1) * 256
    feats = rng.normal(size=(9, 6)).astype(np.float32)
    with h5py.File(tmp_path / "a.h5", "w") as f:  # CLAM/TRIDENT layout
        f["features"] = feats[None]
        f["coords"] = coords[None]
    torch.save({"features": torch.as_tensor(feats), "coords": torch.as_tensor(coords)}, tmp_path / "b.pt")
    np.savez(tmp_path / "c.npz", features=feats, coords=coords)
    (tmp_path / "d.h5").write_bytes(b"not an h5 file")
    np.savez(tmp_path / "e.npz", features=feats, coords=np.zeros((9, 2)))  # duplicate coordinates
    (tmp_path / "labels.csv").write_text("slide_id,label\na,1\nb,0\nc,x\nd,1\ne,0\n")
    bags = load_bags(tmp_path, tmp_path / "labels.csv")
    assert [b.name for b in bags] == ["a", "b"]
    assert len(bags.skipped) == 4  # bad row (line 4), c without label, d unreadable, e duplicates
    assert any(s[0].endswith(":4") for s in bags.skipped)
    np.testing.assert_allclose(bags[0].x.numpy(), feats)
    assert bags[0].edge_index.shape[1] == 40
    assert float(bags[1].y) == 0.0
