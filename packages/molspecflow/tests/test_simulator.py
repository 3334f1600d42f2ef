import itertools

import numpy as np
import pytest
from matchms import Spectrum
from molspecflow import FragmentSimulator
from molspecflow.simulator import H_SHIFTS, NEUTRAL_LOSSES
from rdkit import Chem
from rdkit.Chem.Descriptors import ExactMolWt

PROTON = 1.007276
H = 1.00782503207
MOLS = ["CC(=O)Nc1ccc(O)cc1", "COc1ccc(CCN)cc1", "O=C(O)c1ccccc1C(F)(F)F", "CCN(CC)C(=O)c1cccnc1Cl",
        "Cc1ccc(S(=O)(=O)N2CCCC2)cc1"]


@pytest.mark.parametrize("smi", MOLS)
@pytest.mark.parametrize("noise", [False, True])
def test_precursor_is_exact_mass_plus_proton(smi, noise):
    spec = FragmentSimulator(noise=noise, seed=1).simulate(smi)
    assert isinstance(spec, Spectrum)
    assert spec.get("precursor_mz") == pytest.approx(ExactMolWt(Chem.MolFromSmiles(smi)) + PROTON, abs=1e-6)
    assert spec.get("adduct") == "[M+H]+" and spec.get("simulated") is True


def _rdkit_fragment_masses(smi):
    """Independent reference: every piece left by cutting any one or two bonds (RDKit FragmentOnBonds)."""
    mol = Chem.MolFromSmiles(smi)
    out = set()
    bonds = range(mol.GetNumBonds())
    for cut in itertools.chain(itertools.combinations(bonds, 1), itertools.combinations(bonds, 2)):
        frags = Chem.FragmentOnBonds(mol, list(cut), addDummies=True)
        for f in Chem.GetMolFrags(frags, asMols=True, sanitizeFrags=False):
            f.UpdatePropertyCache(strict=False)
            out.add(round(ExactMolWt(f), 5))   # dummy atoms weigh 0 and carry no hydrogens
    out.add(round(ExactMolWt(mol), 5))
    return np.array(sorted(out))


@pytest.mark.parametrize("smi", MOLS[:3])
def test_noise_free_peaks_are_rdkit_fragments_with_h_shifts_plus_proton(smi):
    mz = FragmentSimulator(noise=False).simulate(smi).peaks.mz
    frags = _rdkit_fragment_masses(smi)
    allowed = (frags[:, None] + H_SHIFTS[None, :] * H + PROTON).ravel()
    losses = np.array([m for m, _ in NEUTRAL_LOSSES.values()])
    allowed = np.concatenate([allowed, (allowed[:, None] - losses[None, :]).ravel()])
    err = np.abs(mz[:, None] - allowed[None, :]).min(1)
    assert err.max() < 1e-4, mz[err >= 1e-4]


def test_noise_changes_peaks_and_seed_makes_it_deterministic():
    a = FragmentSimulator(seed=3).simulate(MOLS[0]).peaks.mz
    b = FragmentSimulator(seed=3).simulate(MOLS[0]).peaks.mz
    c = FragmentSimulator(noise=False).simulate(MOLS[0]).peaks.mz
    np.testing.assert_array_equal(a, b)
    assert a.size != c.size or not np.allclose(a, c)


def test_collision_energy_moves_intensity_to_small_fragments():
    sim = FragmentSimulator(noise=False)

    def mean_mz(ce):
        s = sim.simulate(MOLS[1], collision_energy=ce)
        return float((s.peaks.mz * s.peaks.intensities).sum() / s.peaks.intensities.sum())

    assert mean_mz(60) < mean_mz(15)


def test_ion_trap_cuts_low_masses():
    s = FragmentSimulator(profile="iontrap", seed=0).simulate(MOLS[3])
    assert s.peaks.mz.min() >= 0.28 * s.get("precursor_mz")


@pytest.mark.parametrize("kw,match", [({"profile": "tof"}, "profile"), ({"collision_energy": -1}, "collision_energy"),
                                      ({"collision_energy": "30"}, "collision_energy")])
def test_bad_construction(kw, match):
    with pytest.raises(ValueError, match=match):
        FragmentSimulator(**kw)


def test_bad_inputs():
    sim = FragmentSimulator()
    with pytest.raises(ValueError, match=r"\[M\+H\]\+"):
        sim.simulate("CCO", adduct="[M+Na]+")
    with pytest.raises(ValueError, match="invalid SMILES"):
        sim.simulate("C1CC")
