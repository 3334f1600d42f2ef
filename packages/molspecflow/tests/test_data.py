import numpy as np
import pytest
import torch
from matchms import Spectrum
from matchms.exporting import save_as_mgf
from molspecflow import load_spectra, make_dataset
from molspecflow.data import MOL, SPEC, bin_spectrum, scaffold_of
from molspecflow.model import ABSENT, GENERATED, GIVEN, MolSpecFlow

SMILES = ["CC(=O)Nc1ccc(O)cc1", "COc1ccc(CCN)cc1", "O=C(O)c1ccccc1C(F)(F)F"] * 10


@pytest.mark.parametrize("kw,match", [
    ({"paired": 0.5, "molecule_only": 0.5, "spectrum_only": 0.2}, "<= 1"),
    ({"paired": 0.1, "molecule_only": -0.1}, ">= 0"),
    ({"paired": 0.0}, "no paired|paired must be > 0"),
])
def test_bad_fractions(kw, match):
    with pytest.raises(ValueError, match=match):
        make_dataset(50, smiles=SMILES * 2, **kw)


def test_bad_rows_are_skipped_and_counted():
    ds = make_dataset(40, smiles=["C1CC", "not smiles", *SMILES, "[Na+].[Cl-]"], paired=0.5, molecule_only=0.2,
                      spectrum_only=0.1, seed=0)
    assert ds.skipped["invalid_smiles"] == 2
    assert len(ds) == len(SMILES)


def test_spectrum_only_rows_carry_no_molecule(small_data):
    so = small_data.rows("spectrum_only")
    assert so.size > 0
    assert not small_data.tokens[so].any() and not small_data.fp[so].any() and not small_data.formula[so].any()
    assert all(small_data.smiles[i] is None for i in so)
    assert small_data.avail[so, SPEC].all() and not small_data.avail[so, MOL].any()
    mo = small_data.rows("molecule_only")
    assert not small_data.spec[mo].any() and not small_data.avail[mo, SPEC].any()


def test_scaffold_split_and_fractions(small_data):
    test = {scaffold_of(small_data.smiles[i]) for i in small_data.rows("test")}
    train = {scaffold_of(s) for s, r in zip(small_data.smiles, small_data.role) if r in ("paired", "molecule_only")}
    assert not test & train
    n = len(small_data)
    assert abs((small_data.role == "test").sum() / n - 0.15) < 0.05
    assert small_data.extra["spec_heldout"][small_data.rows("test")].any(1).all()


def test_hidden_parts_do_not_change_the_loss(small_data):
    """Absent views are neither attended to nor scored: changing them leaves the loss unchanged."""
    torch.manual_seed(0)
    model = MolSpecFlow(dim=32, depth=2, heads=2)
    idx = np.concatenate([small_data.rows("spectrum_only")[:4], small_data.rows("molecule_only")[:4],
                          small_data.rows("paired")[:4]])
    batch = small_data.batch(idx)
    state = model.sample_states(batch["avail"], generator=torch.Generator().manual_seed(1))
    state[8:, 0] = ABSENT        # paired rows in the retrieval task: the molecule is hidden
    state[8:, 1] = GENERATED
    state[8:, 2] = GIVEN
    batch["state"] = state
    a = model.loss(batch, generator=torch.Generator().manual_seed(2))
    spy = {k: v.clone() for k, v in batch.items()}
    spy["tokens"][:4] = torch.randint(2, 50, spy["tokens"][:4].shape)     # spectrum-only rows: a molecule appears
    spy["fp"][:4] = 1.0
    spy["spec"][4:8] = torch.rand_like(spy["spec"][4:8])                 # molecule-only rows: a spectrum appears
    spy["tokens"][8:] = torch.randint(2, 50, spy["tokens"][8:].shape)    # hidden molecule of retrieval rows
    b = model.loss(spy, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a, b)
    spy["spec"][8:] = 0.0                                                # a given view does change it
    assert not torch.equal(a, model.loss(spy, generator=torch.Generator().manual_seed(2)))


def _spectra():
    return [Spectrum(mz=np.array([50.0, 80.5, 120.1]), intensities=np.array([0.2, 1.0, 0.5]),
                     metadata={"precursor_mz": 150.1, "smiles": "CCO", "collision_energy": 30}),
            Spectrum(mz=np.array([60.0]), intensities=np.array([1.0]), metadata={"title": "no precursor"}),
            Spectrum(mz=np.array([55.0, 70.0]), intensities=np.array([1.0, 0.3]), metadata={"precursor_mz": 99.0})]


def test_load_mgf_skips_and_counts(tmp_path):
    path = tmp_path / "x.mgf"
    save_as_mgf(_spectra(), str(path))
    got = load_spectra(path)
    assert len(got) == 2 and got.skipped["no_precursor"] == [2]
    np.testing.assert_allclose(got[0].peaks.mz, [50.0, 80.5, 120.1])


def test_load_massspecgym_tsv(tmp_path):
    path = tmp_path / "msg.tsv"
    path.write_text("identifier\tmzs\tintensities\tsmiles\tformula\tprecursor_mz\tadduct\tcollision_energy\n"
                    "a\t50.0,91.05\t0.5,1.0\tCCO\tC2H6O\t47.05\t[M+H]+\t30\n"
                    "b\t\t\tCCC\tC3H8\t45.07\t[M+H]+\t30\n"
                    "c\t60.0\t1.0\tCCN\tC2H7N\t\t[M+H]+\t30\n")
    got = load_spectra(path)
    assert len(got) == 1 and got[0].get("precursor_mz") == pytest.approx(47.05)
    assert got.skipped["no_peaks"] == [2] and got.skipped["no_precursor"] == [3]


MZML = """<?xml version="1.0" encoding="utf-8"?>
<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">
<cvList count="1"><cv id="MS" fullName="PSI-MS" URI="https://psidev.info" version="4.1"/></cvList>
<run id="r"><spectrumList count="1">
<spectrum index="0" id="scan=1" defaultArrayLength="2">
<cvParam cvRef="MS" accession="MS:1000511" name="ms level" value="2"/>
<precursorList count="1"><precursor><selectedIonList count="1"><selectedIon>
<cvParam cvRef="MS" accession="MS:1000744" name="selected ion m/z" value="181.0707"/>
<cvParam cvRef="MS" accession="MS:1000041" name="charge state" value="1"/>
</selectedIon></selectedIonList></precursor></precursorList>
<binaryDataArrayList count="2">
<binaryDataArray encodedLength="{lm}"><cvParam cvRef="MS" accession="MS:1000523" name="64-bit float" value=""/>
<cvParam cvRef="MS" accession="MS:1000576" name="no compression" value=""/>
<cvParam cvRef="MS" accession="MS:1000514" name="m/z array" value=""/><binary>{mz}</binary></binaryDataArray>
<binaryDataArray encodedLength="{li}"><cvParam cvRef="MS" accession="MS:1000523" name="64-bit float" value=""/>
<cvParam cvRef="MS" accession="MS:1000576" name="no compression" value=""/>
<cvParam cvRef="MS" accession="MS:1000515" name="intensity array" value=""/><binary>{it}</binary></binaryDataArray>
</binaryDataArrayList></spectrum></spectrumList></run></mzML>
"""


def test_load_mzml(tmp_path):
    import base64

    mz = base64.b64encode(np.array([91.05, 121.06], "<f8").tobytes()).decode()
    it = base64.b64encode(np.array([100.0, 40.0], "<f8").tobytes()).decode()
    path = tmp_path / "x.mzML"
    path.write_text(MZML.format(mz=mz, it=it, lm=len(mz), li=len(it)))
    got = load_spectra(path)
    assert len(got) == 1
    assert got[0].get("precursor_mz") == pytest.approx(181.0707)
    np.testing.assert_allclose(got[0].peaks.mz, [91.05, 121.06])


def test_mzml_without_psims_names_it(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psims" else real(name, *a))
    (tmp_path / "x.mzML").write_text("<mzML/>")
    with pytest.raises(ImportError, match="psims"):
        load_spectra(tmp_path / "x.mzML")


def test_load_bad_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_spectra(tmp_path / "none.mgf")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ValueError, match="format"):
        load_spectra(tmp_path / "x.txt")


def test_bin_spectrum():
    v = bin_spectrum([50.1, 50.3, 99.9, 1000.0], [1.0, 1.0, 0.5, 9.0])
    assert v[50] == pytest.approx(1.0) and v[100] == pytest.approx(np.sqrt(0.25))
    assert v.shape == (400,) and np.count_nonzero(v) == 2
