import numpy as np
import pytest
import torch
from molspecflow import expected_mass, formula_decoys
from molspecflow.chem import Tokenizer, default_vocab, inchikey
from rdkit import Chem
from rdkit.Chem.Descriptors import ExactMolWt
from rdkit.Chem.rdMolDescriptors import CalcMolFormula

H = 1.00782503207


@pytest.mark.parametrize("smi", ["CC(=O)Nc1ccc(O)cc1", "O=C(O)c1ccccc1C(F)(F)F", "Cc1ccc(S(=O)(=O)N2CCCC2)cc1"])
def test_expected_mass_exact_on_one_hot(smi):
    tok = Tokenizer()
    ids = torch.as_tensor(tok.encode(smi))
    logits = torch.full((1, len(ids), len(tok.tokens)), -1e4)
    logits[0, torch.arange(len(ids)), ids] = 1e4
    mol = Chem.MolFromSmiles(smi)
    n_h = sum(a.GetTotalNumHs() for a in mol.GetAtoms())
    # no token of these molecules writes a hydrogen: the token mass is ExactMolWt minus all hydrogens
    want = ExactMolWt(mol) - n_h * H
    assert expected_mass(logits.double(), tok.tokens).item() == pytest.approx(want, abs=1e-6)
    as_dict = {t: i for i, t in enumerate(tok.tokens)}
    assert expected_mass(logits.double(), as_dict).item() == pytest.approx(want, abs=1e-6)


def test_expected_mass_has_gradient_on_soft_tokens():
    V = len(default_vocab())
    logits = torch.randn(2, 5, V, requires_grad=True)
    m = expected_mass(logits, default_vocab())
    assert m.shape == (2,)
    m.sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    # argmax tokens would give no gradient: the soft expectation differs from the hard one
    hard = torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1e4)
    assert not torch.allclose(expected_mass(hard, default_vocab()), m.detach())


def test_expected_mass_bad_input():
    with pytest.raises(ValueError, match="shape"):
        expected_mass(torch.zeros(3, 4), default_vocab())
    with pytest.raises(ValueError, match="classes"):
        expected_mass(torch.zeros(1, 2, 5), default_vocab())
    with pytest.raises(TypeError, match="vocab"):
        expected_mass(torch.zeros(1, 2, 5), "abc")


def test_tokenizer_round_trip_and_rejects():
    tok = Tokenizer()
    for smi in ["CC(=O)Nc1ccc(O)cc1", "c1cc[nH]c1", "CN1CCC(C(=O)O)CC1"]:
        assert tok.decode(tok.encode(smi)) == Chem.MolToSmiles(Chem.MolFromSmiles(smi))
    assert tok.encode("not a smiles") is None
    assert Tokenizer(max_len=4).encode("CCCCCCCC") is None


def test_formula_decoys_share_formula_and_exclude_query():
    from paperworks.moses import load_moses

    pool = load_moses("train", n=20000, seed=0)
    from molspecflow.chem import formula_index

    index = formula_index(20000)
    q = next(s for s in pool if len(index[CalcMolFormula(Chem.MolFromSmiles(s))]) >= 6)
    dec = formula_decoys(q, n=4, index_size=20000)
    assert len(dec) == 4
    f = CalcMolFormula(Chem.MolFromSmiles(q))
    assert all(CalcMolFormula(Chem.MolFromSmiles(d)) == f for d in dec)
    keys = [inchikey(d) for d in dec]
    assert inchikey(q) not in keys and len(set(keys)) == len(keys)
    # the query written another way is still excluded
    other = Chem.MolToSmiles(Chem.MolFromSmiles(q), doRandom=True)
    assert inchikey(q) not in [inchikey(d) for d in formula_decoys(other, n=10, index_size=20000)]


def test_formula_decoys_bad_input():
    with pytest.raises(ValueError, match="SMILES"):
        formula_decoys("C1CC", index_size=20000)
    with pytest.raises(ValueError, match="n must"):
        formula_decoys("CCO", n=0, index_size=20000)
    assert np.isfinite(len(formula_decoys("CCO", n=3, index_size=20000)))
