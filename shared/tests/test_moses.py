"""paperworks.moses: the shipped MOSES splits and their reader."""

import gzip

import pytest

from paperworks import atomic_torch_save
from paperworks.moses import MOSES_DIR, load_moses, moses_path


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PAPERWORKS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PAPERWORKS_MOSES_DIR", raising=False)


def test_splits_ship_with_their_licence():
    for split in ("train", "test", "test_scaffolds"):
        assert moses_path(split).is_file()
    assert "MIT" in (MOSES_DIR / "LICENSE").read_text() or "Permission is hereby granted" in (MOSES_DIR / "LICENSE").read_text()


def test_test_split_is_the_release():
    smiles = load_moses("test")
    assert len(smiles) == 176074  # the size of MOSES's test split
    assert smiles[0] == "CC1C2CCC(C2)C1CN(CCO)C(=O)c1ccc(Cl)cc1"


def test_subset_is_seeded_cached_and_without_replacement(tmp_path):
    a = load_moses("test_scaffolds", n=50, seed=3)
    b = load_moses("test_scaffolds", n=50, seed=3)  # from the cache
    assert a == b and len(set(a)) == 50
    assert (tmp_path / "cache" / "moses" / "test_scaffolds_50_3.smi").exists()
    assert load_moses("test_scaffolds", n=50, seed=4) != a
    assert set(a) <= set(load_moses("test_scaffolds"))


def test_user_root(tmp_path, monkeypatch):
    with gzip.open(tmp_path / "test.csv.gz", "wt") as fh:
        fh.write("ID,SMILES\n1,CCO\n2,c1ccccc1\n")
    assert load_moses("test", root=tmp_path) == ["CCO", "c1ccccc1"]
    monkeypatch.setenv("PAPERWORKS_MOSES_DIR", str(tmp_path))
    assert load_moses("test") == ["CCO", "c1ccccc1"]
    with pytest.raises(FileNotFoundError, match="PAPERWORKS_MOSES_DIR"):
        load_moses("train")


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="split"):
        moses_path("valid")
    for n in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n must"):
            load_moses("test", n=n)
    with gzip.open(tmp_path / "test.csv.gz", "wt") as fh:
        fh.write("smiles\nCCO\n")
    with pytest.raises(ValueError, match="no SMILES column"):
        load_moses("test", root=tmp_path)


def test_atomic_torch_save_round_trip(tmp_path):
    torch = pytest.importorskip("torch")
    path = atomic_torch_save({"w": torch.arange(3)}, tmp_path / "sub" / "m.pt")
    assert torch.equal(torch.load(path, weights_only=True)["w"], torch.arange(3))
    assert [p.name for p in path.parent.iterdir()] == ["m.pt"]
