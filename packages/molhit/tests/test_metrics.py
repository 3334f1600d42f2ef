import math

import numpy as np
import pytest
from molhit import moses_metrics
from molhit.metrics import internal_diversity, sa_score, scaf_similarity, snn
from rdkit import Chem
from rdkit.Chem import QED


def test_validity_uniqueness_novelty_by_hand():
    gen = ["CCO", "OCC", "c1ccccc1", "C1CC", None, "CC.O"]
    m = moses_metrics(gen, train=["CCO"])
    assert m["n_valid"] == 3 and m["n_invalid"] == 3
    assert m["valid"] == pytest.approx(3 / 6)
    assert m["valid_lenient"] == pytest.approx(4 / 6)  # CC.O -> largest fragment
    assert m["unique"] == pytest.approx(2 / 3)  # CCO == OCC
    assert m["unique@1000"] == pytest.approx(2 / 3)  # MOSES: all valid ones when fewer than k
    assert m["Novelty"] == pytest.approx(1 / 2)  # benzene is new, ethanol is not


def test_quality_by_hand():
    gen = ["CC(=O)Nc1ccc(O)cc1", "CC(=O)Nc1ccc(O)cc1", "CCO"]
    mol = Chem.MolFromSmiles(gen[0])
    good = QED.qed(mol) >= 0.6 and sa_score(mol) <= 4
    assert moses_metrics(gen)["quality"] == pytest.approx((1 if good else 0) / 3)
    assert QED.qed(Chem.MolFromSmiles("CCO")) < 0.6


def test_similarity_metrics_identities():
    s = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1"]
    assert snn(s, s) == pytest.approx(1.0)
    assert internal_diversity(["CCO", "CCO"]) == pytest.approx(0.0)
    # same two-ring scaffold (biphenyl) / different ones; single-ring scaffolds are not counted (MOSES)
    assert scaf_similarity(["Oc1ccccc1-c1ccccc1"], ["Nc1ccc(-c2ccccc2)cc1"]) == pytest.approx(1.0)
    assert scaf_similarity(["Oc1ccccc1-c1ccccc1"], ["OC1CCCCC1C1CCCCC1"]) == pytest.approx(0.0)
    assert math.isnan(scaf_similarity(["c1ccccc1O"], ["c1ccccc1N"]))
    m = moses_metrics(s, reference=s, compute_fcd=False)
    assert m["Frag/Test"] == pytest.approx(1.0) and m["SNN/Test"] == pytest.approx(1.0)


def test_all_invalid_gives_nan_not_crash():
    m = moses_metrics([None, "xx"])
    assert m["valid"] == 0 and math.isnan(m["unique"])


def test_bad_input():
    with pytest.raises(TypeError, match="smiles must"):
        moses_metrics("CCO")
    with pytest.raises(ValueError, match="smiles must"):
        moses_metrics([])


def test_empty_reference_is_refused():
    from molhit.metrics import moses_metrics

    with pytest.raises(ValueError, match="reference"):
        moses_metrics(["CCO", "CCN"], reference=[], compute_fcd=False)


def test_intdiv2_and_unique_at_k_by_hand():
    from molhit.metrics import _fps
    from rdkit import DataStructs

    gen = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN", "CCO"]   # MOSES keeps duplicates in IntDiv
    fps = _fps(gen)
    sim = np.array([DataStructs.BulkTanimotoSimilarity(f, fps) for f in fps])
    m = moses_metrics(gen)
    assert m["IntDiv"] == pytest.approx(1 - np.mean(np.mean(sim, 1)))
    assert m["IntDiv2"] == pytest.approx(1 - np.mean(np.sqrt(np.mean(sim ** 2, 1))), abs=1e-12)
    assert m["unique@1000"] == pytest.approx(4 / 5)


def test_fcd_on_a_fixed_n_is_nan_with_fewer_valid():
    pytest.importorskip("fcd_torch")
    gen = ["CCO", "CCN", None]
    m = moses_metrics(gen, reference=["CCO", "CCC", "CCN"], fcd_n=3)
    assert math.isnan(m["FCD/Test"]) and m["fcd_n"] == 3
    with pytest.raises(ValueError, match="fcd_n"):
        moses_metrics(gen, reference=["CCO"], fcd_n=1)
