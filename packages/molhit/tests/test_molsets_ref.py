"""Our MOSES metrics against MOSES's own metric code (molsets files loaded by path, see molhit.molsets_ref)."""

import sys

import pytest
from molhit import moses_metrics
from molhit.metrics import sa_score

molsets_ref = pytest.importorskip("molhit.molsets_ref")


@pytest.fixture(scope="module")
def moses_code():
    try:
        return molsets_ref.load()
    except ImportError as err:
        pytest.skip(f"molsets metric code does not load: {err}")


@pytest.fixture(scope="module")
def sets(moses_sample):
    # duplicates, small molecules, and molecules MOSES's filters reject (a charge, an 8-ring, a PAINS hit)
    gen = moses_sample[:60] + ["c1ccccc1CC(=O)O", "CCO", "CCO", "OCC", "C[N+](C)(C)CCO", "C1CCCCCCC1",
                               "O=C1C(=Cc2ccccc2)SC(=S)N1"]
    return gen, moses_sample[150:250]


def test_loading_leaves_no_trace(moses_code):
    from molhit.data import moses_path

    assert "rdkit.six" not in sys.modules and not any(k == "moses" or k.startswith("moses.") for k in sys.modules)
    assert moses_path("test").exists()  # the data lookup still finds the real package
    assert moses_code[0].__file__.endswith("moses/metrics/metrics.py")


def test_similarity_metrics_match_moses(moses_code, sets):
    gen, ref = sets
    ours = moses_metrics(gen, ref, compute_fcd=False)
    theirs = molsets_ref.moses_reference_metrics(gen, ref)
    for key, their_key in [("SNN/Test", "snn"), ("Frag/Test", "frag"), ("Scaf/Test", "scaf"), ("IntDiv", "intdiv"),
                           ("IntDiv2", "intdiv2"), ("Filters", "filters"), ("unique", "unique")]:
        assert ours[key] == pytest.approx(theirs[their_key], abs=1e-6), key
    assert ours["valid"] == pytest.approx(theirs["valid"])
    assert 0 < theirs["scaf"] < 1 and ours["unique"] < 1 and 0 < theirs["filters"] < 1  # not trivial


def test_validity_differs_exactly_on_disconnected_graphs(moses_code):
    gen = ["CCO", "CC.O", "C1CC", "c1ccccc1", "C[N+](=O)[O-]", "CC(C)(C)(C)C"]
    ours = moses_metrics(gen)
    theirs = molsets_ref.moses_reference_metrics(gen, ["CCO"])
    assert theirs["valid"] == pytest.approx(4 / 6)  # MOSES: parsable and sanitisable, '.' allowed
    assert ours["valid"] == pytest.approx(3 / 6)  # ours (strict): also one component
    assert ours["valid_lenient"] == pytest.approx(theirs["valid"])


def test_novelty_and_sa_match_moses(moses_code, sets):
    gen, ref = sets
    train = ref[:50] + gen[:30]
    ours = moses_metrics(gen, train=train, compute_fcd=False)
    theirs = molsets_ref.moses_reference_metrics(gen, ref, train=train)
    assert ours["Novelty"] == pytest.approx(theirs["novelty"])
    _, mu = moses_code
    from rdkit import Chem

    for s in gen[:20]:
        m = Chem.MolFromSmiles(s)
        assert sa_score(m) == pytest.approx(mu.SA(m), abs=1e-6)
