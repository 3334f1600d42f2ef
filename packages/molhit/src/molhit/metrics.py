"""The MOSES metric suite, written with RDKit (``import moses`` fails on current RDKit).

Definitions and metric names follow MOSES (Polykovskiy et al., 2020, "Molecular Sets (MOSES)",
``moses.get_all_metrics``):

- ``valid``: fraction of the samples that are valid. *Strict* (ours): the SMILES parses, sanitises
  with no fixing and is one connected molecule (no '.'); MOSES's ``fraction_valid`` also counts a
  disconnected SMILES, which is our ``valid_lenient`` (the largest fragment of a parsable SMILES is
  kept), reported beside strict, never instead of it.
- ``unique@1000`` / ``unique@10000``: unique canonical SMILES among the first k valid samples (MOSES's
  ``fraction_unique(valid, k)``; with fewer than k valid samples MOSES warns and uses them all, and so
  do we: ``n_valid`` says how many there were). ``unique``: over all valid samples.
- ``Novelty``: fraction of the unique valid molecules not in the training set.
- ``SNN/Test``: mean over generated molecules of the max Tanimoto similarity (Morgan r=2, 1024 bits)
  to the reference (test) set.
- ``Frag/Test`` / ``Scaf/Test``: cosine similarity of BRICS-fragment / Bemis–Murcko-scaffold count
  vectors (fragments: the molecule cut at its BRICS bonds; scaffolds with < 2 rings are not counted —
  both exactly as MOSES's ``compute_fragments``/``compute_scaffolds``).
- ``IntDiv`` / ``IntDiv2``: 1 − mean_i (mean_j T_ij^p)^(1/p) over all ordered pairs of the generated
  set (self pairs included), p = 1 / 2, as MOSES's ``internal_diversity``.
- ``Filters``: fraction of the valid molecules that pass MOSES's MCF and PAINS filters, have only
  C, N, S, O, F, Cl, Br, H, no charge and no ring of 8 or more atoms (``mol_passes_filters``, with
  MOSES's own ``mcf.csv``/``wehi_pains.csv`` shipped in ``molhit/_vendor/moses``).
- ``FCD/Test``: Fréchet ChemNet distance to the test set via ``fcd_torch`` (its wheel ships the
  weights). FCD is biased upwards at small n (MOSES test against the same reference: ~7.6 at
  n = 200, ~1.9 at 1,000), so ``moses_metrics(fcd_n=n)`` computes it on exactly the first n valid
  samples (``nan`` with fewer) and :func:`fcd_floor` gives the same-n MOSES-vs-MOSES value.
- ``quality``: fraction of *all* samples that are valid, unique, QED ≥ 0.6 and SA ≤ 4 (the GenMol
  definition, Lee et al. 2025; not a MOSES metric); SA from RDKit's Contrib ``sascorer``.

SNN, Frag, Scaf, IntDiv, Filters and FCD are computed on the valid samples. :mod:`molhit.molsets_ref`
loads MOSES's own metric code so the tests can compare the two.
"""

from __future__ import annotations

import importlib.util
import os
from collections import Counter

import numpy as np
from rdkit import Chem, DataStructs
from rdkit.Chem import QED, RDConfig, rdFingerprintGenerator
from rdkit.Chem.Scaffolds import MurckoScaffold

_MORGAN = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
_sascorer = None


def _sa():
    global _sascorer
    if _sascorer is None:
        path = os.path.join(RDConfig.RDContribDir, "SA_Score", "sascorer.py")
        if not os.path.isfile(path):
            raise ImportError(f"RDKit's SA_Score contrib is missing (looked for {path})")
        # an RDKit Contrib file, not a distribution: load it by path
        spec = importlib.util.spec_from_file_location("molhit._sascorer", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _sascorer = mod
    return _sascorer


def sa_score(mol) -> float:
    """Synthetic accessibility (Ertl & Schuffenhauer 2009), 1 (easy) .. 10 (hard)."""
    return float(_sa().calculateScore(mol))


def canonical(smiles, *, lenient: bool = False) -> str | None:
    """Canonical SMILES, or ``None`` if invalid (strict: one component; lenient: largest fragment)."""
    if not isinstance(smiles, str) or not smiles:
        return None
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    frags = Chem.GetMolFrags(mol, asMols=True)
    if len(frags) > 1:
        if not lenient:
            return None
        mol = max(frags, key=lambda m: m.GetNumAtoms())
    return Chem.MolToSmiles(mol)


def _fps(smiles):
    return [_MORGAN.GetFingerprint(Chem.MolFromSmiles(s)) for s in smiles]


def snn(gen, ref) -> float:
    """Mean nearest-neighbour Tanimoto similarity of ``gen`` to ``ref`` (Morgan r=2, 1024 bits)."""
    fr = _fps(ref)
    return float(np.mean([max(DataStructs.BulkTanimotoSimilarity(f, fr)) for f in _fps(gen)]))


def internal_diversity(gen) -> float:
    """IntDiv1 = 1 − mean pairwise Tanimoto over all ordered pairs (self pairs included)."""
    fg = _fps(gen)
    return float(1.0 - np.mean([np.mean(DataStructs.BulkTanimotoSimilarity(f, fg)) for f in fg]))


def _cos(a: Counter, b: Counter) -> float:
    keys = sorted(set(a) | set(b))
    va, vb = np.array([a.get(k, 0) for k in keys], float), np.array([b.get(k, 0) for k in keys], float)
    den = np.linalg.norm(va) * np.linalg.norm(vb)
    return float(va @ vb / den) if den > 0 else float("nan")


def fragments(smiles) -> Counter:
    """BRICS fragment counts: the molecule cut at its BRICS bonds (dummy atoms kept), as in MOSES."""
    c = Counter()
    for s in smiles:
        c.update(Chem.MolToSmiles(Chem.FragmentOnBRICSBonds(Chem.MolFromSmiles(s))).split("."))
    return c


def scaffold(smiles: str, *, min_rings: int = 0) -> str:
    """Canonical Bemis–Murcko scaffold SMILES ('' for an acyclic molecule or fewer than ``min_rings`` rings)."""
    scaf = MurckoScaffold.GetScaffoldForMol(Chem.MolFromSmiles(smiles))
    if scaf.GetRingInfo().NumRings() < max(min_rings, 1):
        return ""
    return Chem.MolToSmiles(scaf)


def scaffolds(smiles, *, min_rings: int = 2) -> Counter:
    """Bemis–Murcko scaffold counts. As in MOSES's ``compute_scaffolds``, scaffolds with fewer than
    ``min_rings`` = 2 rings (so a lone benzene ring, and acyclic molecules) are not counted."""
    c = Counter(scaffold(s, min_rings=min_rings) for s in smiles)
    c.pop("", None)
    return c


def frag_similarity(gen, ref) -> float:
    return _cos(fragments(gen), fragments(ref))


def scaf_similarity(gen, ref) -> float:
    return _cos(scaffolds(gen), scaffolds(ref))


_FCD = {}


def fcd(gen, ref) -> float:
    """Fréchet ChemNet distance with ``fcd_torch`` (CPU, offline weights).

    The ChemNet model and the reference statistics are kept between calls (same ``ref``).
    """
    from fcd_torch import FCD

    if "model" not in _FCD:
        _FCD["model"] = FCD(device="cpu", n_jobs=1)
    model, key = _FCD["model"], hash(tuple(ref))
    if _FCD.get("key") != key:
        _FCD["ref"], _FCD["key"] = model.precalc(list(ref)), key
    return float(model.metric(_FCD["ref"], model.precalc(list(gen))))


def internal_diversity_p(gen, p: int = 1) -> float:
    """MOSES's ``internal_diversity(gen, p)``: 1 − mean_i (mean_j T_ij^p)^(1/p), self pairs included."""
    fg = _fps(gen)
    per = [np.mean(np.power(DataStructs.BulkTanimotoSimilarity(f, fg), p)) ** (1.0 / p) for f in fg]
    return float(1.0 - np.mean(per))


_FILTERS = []


def _filter_patterns():
    if not _FILTERS:
        import csv
        from pathlib import Path

        base = Path(__file__).resolve().parent / "_vendor" / "moses" / "metrics"
        with open(base / "mcf.csv", newline="", encoding="utf-8") as fh:
            smarts = [row["smarts"] for row in csv.DictReader(fh)]
        with open(base / "wehi_pains.csv", newline="", encoding="utf-8") as fh:
            smarts += [row[0].strip() for row in csv.reader(fh) if row]
        _FILTERS.extend(Chem.MolFromSmarts(x) for x in smarts)
    return _FILTERS


def passes_filters(mol) -> bool:
    """MOSES's ``mol_passes_filters``: MCF and PAINS filters, allowed atoms, no charge, no ring >= 8."""
    if isinstance(mol, str):
        mol = Chem.MolFromSmiles(mol)
    if mol is None:
        return False
    rings = mol.GetRingInfo()
    if rings.NumRings() and any(len(r) >= 8 for r in rings.AtomRings()):
        return False
    if any(a.GetFormalCharge() != 0 for a in mol.GetAtoms()):
        return False
    if any(a.GetSymbol() not in {"C", "N", "S", "O", "F", "Cl", "Br", "H"} for a in mol.GetAtoms()):
        return False
    h_mol = Chem.AddHs(mol)
    if any(h_mol.HasSubstructMatch(p) for p in _filter_patterns()):
        return False
    smi = Chem.MolToSmiles(mol, isomericSmiles=False)
    return bool(smi) and Chem.MolFromSmiles(smi) is not None


def fcd_floor(reference, sample) -> float:
    """FCD of ``sample`` (real molecules, e.g. other MOSES test molecules) to ``reference``: the value a
    perfect generator would get at ``len(sample)`` molecules, the small-n bias to read FCD against."""
    return fcd([c for c in (canonical(s) for s in sample) if c is not None], list(reference))


_TRAIN = {}


def _canonical_set(smiles) -> set:
    """Canonical SMILES of a training set, kept for the next call with the same list (novelty is computed
    for many sample sets against one training set)."""
    key = hash(tuple(smiles))
    if _TRAIN.get("key") != key:
        _TRAIN["set"], _TRAIN["key"] = {canonical(s) for s in smiles}, key
    return _TRAIN["set"]


def moses_metrics(smiles, reference=None, *, train=None, lenient_smiles=None, compute_fcd: bool = True,
                  fcd_n: int | None = None, qed_min: float = 0.6, sa_max: float = 4.0) -> dict:
    """The MOSES suite on generated ``smiles``, under MOSES's metric names.

    Args:
        smiles: generated SMILES, one per sample; ``None``/unparsable entries count as invalid.
        reference: the test-set SMILES for SNN/Frag/Scaf/FCD (skipped if ``None``).
        train: training SMILES for ``Novelty`` (skipped if ``None``).
        lenient_smiles: optional per-sample SMILES from lenient decoding (largest fragment);
            if ``None``, lenient validity takes the largest fragment of ``smiles``.
        compute_fcd: FCD needs a few hundred samples to mean anything; off for tiny runs.
        fcd_n: compute ``FCD/Test`` on exactly the first ``fcd_n`` valid samples (``nan`` with fewer),
            so that processes are compared at one n (FCD's bias depends on n); ``None``: all valid ones.

    Returns:
        A dict of floats (``nan`` where undefined) plus ``n``, ``n_valid``, ``n_invalid``: ``valid``,
        ``valid_lenient``, ``unique``, ``unique@1000``, ``unique@10000``, ``Novelty``, ``quality``,
        ``IntDiv``, ``IntDiv2``, ``Filters`` and, with a reference, ``SNN/Test``, ``Frag/Test``,
        ``Scaf/Test``, ``FCD/Test`` (see the module docstring).

    Example:
        >>> moses_metrics(["CCO", "CCO", "C1CC", None])["valid"]
        0.5
    """
    if isinstance(smiles, str) or not hasattr(smiles, "__len__"):
        raise TypeError(f"smiles must be a list of SMILES strings, got {type(smiles).__name__}")
    n = len(smiles)
    if n == 0:
        raise ValueError("smiles must hold at least one sample")
    if fcd_n is not None and (not isinstance(fcd_n, int) or isinstance(fcd_n, bool) or fcd_n < 2):
        raise ValueError(f"fcd_n must be an int >= 2 or None, got {fcd_n!r}")
    valid = [c for c in (canonical(s) for s in smiles) if c is not None]
    lsrc = smiles if lenient_smiles is None else lenient_smiles
    if len(lsrc) != n:
        raise ValueError(f"lenient_smiles must have one entry per sample ({n}), got {len(lsrc)}")
    n_lenient = sum(canonical(s, lenient=True) is not None for s in lsrc)
    uniq = sorted(set(valid))
    nan = float("nan")
    out = {"n": n, "n_valid": len(valid), "n_invalid": n - len(valid), "valid": len(valid) / n,
           "valid_lenient": n_lenient / n, "unique": len(uniq) / len(valid) if valid else nan}
    for k in (1000, 10000):  # MOSES: the first k valid ones (all of them, with a warning, if fewer)
        out[f"unique@{k}"] = len(set(valid[:k])) / len(valid[:k]) if valid else nan
    if train is not None:
        tr = _canonical_set(train)
        out["Novelty"] = float(np.mean([s not in tr for s in uniq])) if uniq else nan
    good = 0
    for s in uniq:
        m = Chem.MolFromSmiles(s)
        good += QED.qed(m) >= qed_min and sa_score(m) <= sa_max
    out["quality"] = good / n
    out["IntDiv"] = internal_diversity(valid) if valid else nan
    out["IntDiv2"] = internal_diversity_p(valid, 2) if valid else nan
    out["Filters"] = float(np.mean([passes_filters(s) for s in valid])) if valid else nan
    if reference is not None:
        ref = [c for c in (canonical(s) for s in reference) if c is not None]
        if not ref:
            raise ValueError(f"reference holds no valid SMILES ({len(reference)} given): SNN/Frag/Scaf/FCD need a "
                             "reference set; pass reference=None to skip them")
        out["SNN/Test"] = snn(valid, ref) if valid else nan
        out["Frag/Test"] = frag_similarity(valid, ref) if valid else nan
        out["Scaf/Test"] = scaf_similarity(valid, ref) if valid else nan
        if compute_fcd and importlib.util.find_spec("fcd_torch") is not None:
            if fcd_n is None:
                out["FCD/Test"] = fcd(valid, ref) if len(valid) >= 2 else nan
            else:
                out["FCD/Test"] = fcd(valid[:fcd_n], ref) if len(valid) >= fcd_n else nan
            out["fcd_n"] = len(valid) if fcd_n is None else fcd_n
    return out
