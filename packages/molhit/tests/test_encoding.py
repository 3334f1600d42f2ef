import numpy as np
import pytest
from molhit import decoupled_encoding, digress_encoding
from molhit.encoding import CHARGED_SMILES
from rdkit import Chem


def test_decoupled_roundtrips_moses(moses_sample):
    enc = decoupled_encoding()
    assert all(enc.roundtrip(s) for s in moses_sample)


def test_decoupled_roundtrips_charged():
    enc = decoupled_encoding()
    assert all(enc.roundtrip(s) for s in CHARGED_SMILES)
    assert any(Chem.MolFromSmiles(s).GetAtomWithIdx(0).GetFormalCharge() != 0 or "+" in s or "-" in s
               for s in CHARGED_SMILES)


def test_digress_loses_charges_and_aromatic_nh():
    assert not any(digress_encoding().roundtrip(s) for s in CHARGED_SMILES if "+" in s or "-" in s)
    assert not digress_encoding(aromatic_bonds=True).roundtrip("c1cc[nH]c1")


def test_tokens_split_by_role():
    enc = decoupled_encoding()
    names = [t.name for t in enc.tokens]
    atoms, bonds = enc.encode("c1cc[nH]c1C(=O)[O-]")
    got = [names[i] for i in atoms]
    assert got == ["c", "c", "c", "[nH]", "c", "C", "O", "[O-]"]
    assert bonds[5, 6] == enc.bond_names.index("double") and np.array_equal(bonds, bonds.T)
    assert enc.phi[names.index("[nH]")] == enc.phi[names.index("N")]  # same group: nitrogen


def test_decode_strict_and_lenient():
    enc = decoupled_encoding()
    a1, b1 = enc.encode("CCO")
    atoms = np.concatenate([a1, a1[:1]])
    bonds = np.zeros((4, 4), dtype=int)
    bonds[:3, :3] = b1
    assert enc.decode(atoms, bonds) is None  # two components
    assert Chem.MolToSmiles(enc.decode(atoms, bonds, lenient=True)) == "CCO"
    c = enc.tokens.index(next(t for t in enc.tokens if t.name == "C"))
    five = np.full(6, c)
    star = np.zeros((6, 6), dtype=int)
    star[0, 1:] = star[1:, 0] = 1
    assert enc.decode(five, star) is None  # pentavalent carbon, no fixing


def test_unknown_atom_named():
    with pytest.raises(ValueError, match="atom P"):
        decoupled_encoding().encode("CCP")
    with pytest.raises(ValueError, match="mol: cannot parse"):
        decoupled_encoding().encode("C1CC")
    with pytest.raises(TypeError, match="mol must"):
        decoupled_encoding().encode(3)
