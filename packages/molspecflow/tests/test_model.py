import numpy as np
import pytest
import torch
from matchms import Spectrum
from molspecflow import MolSpecFlow, annotation_metrics
from molspecflow.chem import canonical
from molspecflow.data import spectra_arrays
from molspecflow.train import train


def _queries(ds, n=3):
    rows = ds.rows("test")[:n]
    return rows, {"spec": ds.spec[rows], "precursor": ds.precursor[rows], "ce": ds.ce[rows]}


def test_denovo_returns_distinct_valid_molecules(tiny_model, small_data):
    rows, arr = _queries(small_data)
    out = tiny_model.denovo(arr, k=4, steps=3)
    assert len(out) == len(rows)
    for preds in out:
        assert 1 <= len(preds) <= 4 and len(set(preds)) == len(preds)
        assert all(canonical(p) == p for p in preds)


def test_denovo_with_formula_ranks_matches_first(tiny_model, small_data):
    from molspecflow.chem import formula_of

    rows, arr = _queries(small_data, 2)
    forms = [formula_of(small_data.smiles[i]) for i in rows]
    for preds, f in zip(tiny_model.denovo(arr, k=6, steps=3, formula=forms), forms):
        match = [formula_of(p) == f for p in preds]
        assert match == sorted(match, reverse=True)
    with pytest.raises(ValueError, match="formula"):
        tiny_model.denovo(arr, formula=["C2H6O"])


def test_retrieve_both_scores(tiny_model, small_data):
    rows, arr = _queries(small_data, 2)
    cands = [[small_data.smiles[i], "CCO", "c1ccccc1", "not a smiles"] for i in rows]
    for score in ("embedding", "likelihood"):
        ranked, scores = tiny_model.retrieve(arr, cands, k=3, score=score, return_scores=True)
        assert all(len(r) == 3 and set(r) <= set(c) and "not a smiles" not in r for r, c in zip(ranked, cands))
        assert all(np.isneginf(s[3]) and np.isfinite(s[:3]).all() for s in scores)
    with pytest.raises(ValueError, match="score"):
        tiny_model.retrieve(arr, cands, score="cosine")
    with pytest.raises(ValueError, match="one list per spectrum"):
        tiny_model.retrieve(arr, cands[:1])


def test_embedding_score_is_continuous_tanimoto(tiny_model, small_data):
    from molspecflow.chem import fingerprint, mol_of

    rows, arr = _queries(small_data, 1)
    cands = [["CCO", "c1ccccc1O"]]
    _, scores = tiny_model.retrieve(arr, cands, k=2, return_scores=True)
    p = tiny_model.predict_bits(arr)[0].numpy().astype(float)
    for j, c in enumerate(cands[0]):
        b = fingerprint(mol_of(c)).astype(float)
        assert scores[0][j] == pytest.approx((p @ b) / (p.sum() + b.sum() - p @ b), rel=1e-4)


def test_simulate_returns_spectra(tiny_model):
    out = tiny_model.simulate(["CC(=O)Nc1ccc(O)cc1", "CCO"], steps=2)
    assert all(isinstance(s, Spectrum) for s in out)
    assert out[0].get("precursor_mz") == pytest.approx(152.0706, abs=1e-3)
    with pytest.raises(ValueError, match="encode"):
        tiny_model.simulate("C1CC")


def test_matchms_spectra_in(tiny_model):
    from molspecflow import FragmentSimulator

    specs = [FragmentSimulator(seed=0).simulate(s) for s in ("CC(=O)Nc1ccc(O)cc1", "COc1ccc(CCN)cc1")]
    assert len(tiny_model.denovo(specs, k=2, steps=2)) == 2
    arr = spectra_arrays(specs)
    assert arr["spec"].shape == (2, 400)


def test_spectra_without_precursor_or_peaks_are_refused(tiny_model):
    ok = Spectrum(mz=np.array([50.0]), intensities=np.array([1.0]), metadata={"precursor_mz": 120.0})
    no_prec = Spectrum(mz=np.array([50.0]), intensities=np.array([1.0]), metadata={})
    no_peaks = Spectrum(mz=np.array([]), intensities=np.array([]), metadata={"precursor_mz": 120.0})
    with pytest.raises(ValueError, match="precursor"):
        tiny_model.denovo([ok, no_prec])
    with pytest.raises(ValueError, match="no peaks"):
        tiny_model.retrieve([no_peaks], [["CCO"]])
    with pytest.raises(TypeError, match="matchms"):
        tiny_model.denovo(["CCO"])


def test_save_load_round_trip(tiny_model, small_data, tmp_path):
    rows, arr = _queries(small_data, 2)
    tiny_model.save(tmp_path / "m.pt")
    loaded = MolSpecFlow.load(tmp_path / "m.pt")
    torch.testing.assert_close(loaded.predict_bits(arr), tiny_model.predict_bits(arr))
    assert loaded.denovo(arr, k=3, steps=2, seed=1) == tiny_model.denovo(arr, k=3, steps=2, seed=1)
    with pytest.raises(FileNotFoundError):
        MolSpecFlow.load(tmp_path / "missing.pt")


def test_resume_from_mid_training(small_data, tmp_path):
    rows = np.nonzero(small_data.role != "test")[0]

    def fresh():
        torch.manual_seed(0)
        return MolSpecFlow(dim=16, depth=1, heads=2)

    a = fresh()
    train(a, small_data, rows=rows, steps=4, batch_size=8, seed=3)
    b = fresh()
    ck = tmp_path / "ck.pt"

    class Stop(Exception):
        pass

    import molspecflow.train as tr

    real = tr._save

    def save_then_stop(path, model, opt, sched, step, history):
        real(path, model, opt, sched, step, history)
        if step == 2:
            raise Stop

    tr._save = save_then_stop
    try:
        with pytest.raises(Stop):
            train(b, small_data, rows=rows, steps=4, batch_size=8, seed=3, checkpoint=ck, checkpoint_every=2)
    finally:
        tr._save = real
    c = fresh()
    train(c, small_data, rows=rows, steps=4, batch_size=8, seed=3, checkpoint=ck, resume=True)
    for p, q in zip(a.parameters(), c.parameters()):
        torch.testing.assert_close(p, q)
    with pytest.raises(FileNotFoundError, match="checkpoint"):
        train(fresh(), small_data, rows=rows, steps=4, checkpoint=tmp_path / "no.pt", resume=True)


@pytest.mark.parametrize("kw,match", [({"dim": 0}, "dim"), ({"mass_weight": float("nan")}, "mass_weight"),
                                      ({"dim": 30, "heads": 4}, "divisible"), ({"depth": "2"}, "depth")])
def test_bad_construction(kw, match):
    with pytest.raises(ValueError, match=match):
        MolSpecFlow(**kw)


def test_training_lowers_the_loss(small_data):
    torch.manual_seed(0)
    m = MolSpecFlow(dim=32, depth=1, heads=2)
    info = train(m, small_data, rows=np.nonzero(small_data.role != "test")[0], steps=30, batch_size=16, seed=0)
    assert info["loss_last"] < info["loss_first"]


def test_annotation_metrics():
    true = ["CC(=O)Nc1ccc(O)cc1", "CCO"]
    pred = [["CC(=O)Nc1ccc(O)cc1", "CCO"], ["OCC", "CCCO"]]
    m = annotation_metrics(pred, true, ks=(1, 2))
    assert m["top1"] == 1.0 and m["tanimoto@1"] == 1.0 and m["formula@1"] == 1.0 and m["validity"] == 1.0
    m = annotation_metrics([["CCCO"], ["c1ccccc1"]], true, ks=(1,))
    assert m["top1"] == 0.0 and 0 <= m["tanimoto@1"] < 1 and m["formula@1"] == 0.0
    s = Spectrum(mz=np.array([50.0, 70.0]), intensities=np.array([1.0, 0.5]), metadata={"precursor_mz": 100.0})
    assert annotation_metrics([s], [s])["cosine"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="length"):
        annotation_metrics([["CCO"]], true)
