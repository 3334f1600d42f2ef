import pytest
from molhit import decoupled_encoding, graphs_from_smiles, read_smiles_file


def test_read_skips_and_counts_invalid(tmp_path):
    p = tmp_path / "mols.csv"
    p.write_text("id,SMILES\n1,CCO\n2,C1CC\n3,c1ccccc1\n4,not_a_smiles\n")
    smiles, bad = read_smiles_file(p)
    assert smiles == ["CCO", "c1ccccc1"] and bad == 2


def test_read_plain_lines(tmp_path):
    p = tmp_path / "mols.smi"
    p.write_text("CCO name1\nCCN\n")
    assert read_smiles_file(p) == (["CCO", "CCN"], 0)


def test_empty_file_is_an_error(tmp_path):
    p = tmp_path / "empty.smi"
    p.write_text("")
    with pytest.raises(ValueError, match="holds no SMILES"):
        read_smiles_file(p)
    with pytest.raises(FileNotFoundError, match="path"):
        read_smiles_file(tmp_path / "missing.smi")


def test_graphs_count_skips():
    d = graphs_from_smiles(["CCO", "C1CC", "CCP", "c1ccccc1"], decoupled_encoding())
    assert d["skipped"] == {"invalid": 1, "vocabulary": 1, "too_large": 0}
    assert d["X"].shape == (2, 6) and d["n_atoms"].tolist() == [3, 6]
    with pytest.raises(ValueError, match="smiles"):
        graphs_from_smiles([], decoupled_encoding())


def test_moses_sample(moses_sample):
    assert len(moses_sample) == 300 and len(set(moses_sample)) == 300


def test_read_smiles_csv_with_quoted_fields(tmp_path):
    from molhit.data import read_smiles_file

    f = tmp_path / "mols.csv"
    f.write_text('name,SMILES,note\n"ethanol, absolute",CCO,"a, b"\nbenzene,c1ccccc1,x\nbad,C1CC,y\n')
    smiles, bad = read_smiles_file(f)
    assert smiles == ["CCO", "c1ccccc1"] and bad == 1
    f.write_bytes(b"SMILES\nCC\xff\n")
    with pytest.raises(ValueError, match="UTF-8"):
        read_smiles_file(f)
