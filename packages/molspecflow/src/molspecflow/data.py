"""Data: the modality-incomplete dataset (simulated spectra of MOSES molecules) and users' spectra files.

A row has up to three views of one molecule: SELFIES tokens (``mol``), Morgan bits (``fp``) and a
binned spectrum (``spec``) with its precursor m/z and collision energy. ``avail`` says which views
exist. Spectrum-only rows carry no molecule, no bits and no formula: those arrays are zero and the
SMILES is ``None``, so nothing downstream can read the hidden molecule.

The spectra are SIMULATED (:class:`~molspecflow.simulator.FragmentSimulator`), not measured.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from matchms import Spectrum
from rdkit.Chem.Scaffolds import MurckoScaffold

from molspecflow.chem import ELEMENTS, Tokenizer, element_counts, fingerprint, mol_of, token_table
from molspecflow.simulator import PROFILES, FragmentSimulator

log = logging.getLogger(__name__)
N_BINS = 400      # 1-Da bins, bin k covers [k - 0.4, k + 0.6): organic mass defects stay inside
MOL, FP, SPEC = 0, 1, 2


def bin_spectrum(mz, intensities, n_bins: int = N_BINS) -> np.ndarray:
    """Binned spectrum: intensities summed per 1-Da bin, scaled to a maximum of 1, square-rooted."""
    mz, inten = np.asarray(mz, float), np.asarray(intensities, float)
    idx = np.floor(mz + 0.4).astype(int)
    ok = (idx >= 0) & (idx < n_bins) & np.isfinite(inten) & (inten > 0)
    out = np.zeros(n_bins)
    np.add.at(out, idx[ok], inten[ok])
    if out.max() > 0:
        out = out / out.max()
    return np.sqrt(out).astype(np.float32)


def unbin_spectrum(vec, precursor_mz: float, *, floor: float = 0.01, metadata: dict | None = None) -> Spectrum:
    """A ``matchms.Spectrum`` from a binned (square-root) vector: one peak per bin above ``floor``."""
    v = np.clip(np.asarray(vec, float), 0, None) ** 2
    if v.max() > 0:
        v = v / v.max()
    k = np.nonzero(v >= floor)[0]
    k = k[k <= precursor_mz + 0.6]
    meta = {"precursor_mz": float(precursor_mz), "charge": 1, "adduct": "[M+H]+", **(metadata or {})}
    return Spectrum(mz=k.astype(float), intensities=v[k], metadata=meta, metadata_harmonization=False)


@dataclass
class MolSpecDataset:
    """Rows of (tokens, bits, binned spectrum, conditions) with availability masks.

    Attributes (``N`` rows): ``tokens`` (N, L) int64, ``fp`` (N, 1024) uint8, ``spec`` (N, 400)
    float32, ``precursor`` (N,), ``ce`` (N,), ``formula`` (N, 11) element counts (zero when the
    molecule is hidden), ``avail`` (N, 3) bool over (mol, fp, spec), ``role`` (paired /
    molecule_only / spectrum_only / test), ``smiles`` (None for spectrum-only rows), ``profile``.
    ``skipped``: rows dropped, by reason.
    """

    tokens: np.ndarray
    fp: np.ndarray
    spec: np.ndarray
    precursor: np.ndarray
    ce: np.ndarray
    formula: np.ndarray
    avail: np.ndarray
    role: np.ndarray
    smiles: list
    profile: np.ndarray
    tokenizer: Tokenizer
    skipped: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.smiles)

    def rows(self, role: str) -> np.ndarray:
        return np.nonzero(self.role == role)[0]

    def subset(self, idx) -> MolSpecDataset:
        idx = np.asarray(idx, dtype=int)
        return MolSpecDataset(self.tokens[idx], self.fp[idx], self.spec[idx], self.precursor[idx], self.ce[idx],
                              self.formula[idx], self.avail[idx], self.role[idx], [self.smiles[i] for i in idx],
                              self.profile[idx], self.tokenizer, dict(self.skipped),
                              {k: v[idx] for k, v in self.extra.items() if isinstance(v, np.ndarray)})

    def batch(self, idx, device="cpu") -> dict:
        """Tensors of rows ``idx`` (the model's ``loss`` input)."""
        idx = np.asarray(idx, dtype=int)

        def t(x, dtype):
            return torch.as_tensor(x[idx], dtype=dtype, device=device)

        return {"tokens": t(self.tokens, torch.long), "fp": t(self.fp, torch.float32),
                "spec": t(self.spec, torch.float32), "precursor": t(self.precursor, torch.float32),
                "ce": t(self.ce, torch.float32), "formula": t(self.formula, torch.float32),
                "avail": t(self.avail, torch.bool)}


def _check_fraction(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise TypeError(f"{name} must be a number, got {v!r}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")


def scaffold_of(smiles: str) -> str:
    try:
        return MurckoScaffold.MurckoScaffoldSmiles(smiles=smiles)
    except Exception:  # RDKit raises on odd inputs; such molecules form their own group
        return smiles


@lru_cache(maxsize=8)
def _tokenizer(max_len):
    return Tokenizer(max_len=max_len)


_FEATURES: dict = {}  # per (SMILES, max_len): the molecular views, shared by the datasets of one process


def _features(smiles, max_len):
    key = (smiles, max_len)
    if key not in _FEATURES:
        from rdkit.Chem.Descriptors import ExactMolWt

        mol = mol_of(smiles)
        if mol is None:
            out = "invalid_smiles"
        else:
            ids = _tokenizer(max_len).encode(smiles)
            if ids is None:
                out = "out_of_vocabulary_or_too_long"
            elif ExactMolWt(mol) > N_BINS - 5 or any(a.GetFormalCharge() for a in mol.GetAtoms()):
                out = "too_heavy"
            else:
                out = {"tokens": ids, "fp": fingerprint(mol), "formula": element_counts(mol),
                       "scaffold": scaffold_of(smiles)}
        if len(_FEATURES) > 200_000:
            _FEATURES.clear()
        _FEATURES[key] = out
    out = _FEATURES[key]
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in out.items()} if isinstance(out, dict) else out


def make_dataset(n_molecules: int, *, paired: float = 0.05, molecule_only: float = 0.6,
                 spectrum_only: float = 0.2, seed: int | None = None, smiles=None,
                 profiles=("qtof", "orbitrap"), test_profile: str | None = None, noise: bool = True,
                 max_len: int = 48, ce_jitter: float = 10.0) -> MolSpecDataset:
    """The modality-incomplete dataset over MOSES molecules with SIMULATED spectra.

    The remainder ``1 - paired - molecule_only - spectrum_only`` is the test split, chosen by
    Bemis–Murcko scaffold (test scaffolds never occur in training). Test rows carry every view;
    with ``test_profile`` they also get a spectrum from that held-out instrument in
    ``extra["spec_heldout"]``.

    Args:
        n_molecules: MOSES train molecules to draw (``paperworks.moses``), or ``len(smiles)``.
        paired, molecule_only, spectrum_only: fractions of all molecules (≥ 0, sum ≤ 1, paired > 0).
        smiles: use these molecules instead of MOSES.
        profiles: instruments the training and test spectra come from (one drawn per row).
        noise: the simulator's observation model (``False``: the noiseless control).

    Raises:
        ValueError: negative fractions, fractions above 1 in sum, no paired rows, unknown profile.
    """
    for name, v in (("paired", paired), ("molecule_only", molecule_only), ("spectrum_only", spectrum_only)):
        _check_fraction(name, v)
    total = paired + molecule_only + spectrum_only
    if total > 1 + 1e-9:
        raise ValueError(f"paired + molecule_only + spectrum_only must be <= 1 (the rest is the test split), "
                         f"got {total:.4g}")
    if paired <= 0:
        raise ValueError("paired must be > 0: without paired rows nothing links spectra to molecules")
    if isinstance(n_molecules, bool) or not isinstance(n_molecules, int) or n_molecules < 10:
        raise ValueError(f"n_molecules must be an int >= 10, got {n_molecules!r}")
    for p in [*profiles, *([test_profile] if test_profile else [])]:
        if p not in PROFILES:
            raise ValueError(f"unknown instrument profile {p!r}; known: {sorted(PROFILES)}")
    rng = np.random.default_rng(seed)
    if smiles is None:
        from paperworks.moses import load_moses

        smiles = load_moses("train", n=n_molecules, seed=0 if seed is None else int(seed))
    smiles = list(smiles)[:n_molecules]
    tok = Tokenizer(max_len=max_len)
    skipped = {"invalid_smiles": 0, "out_of_vocabulary_or_too_long": 0, "too_heavy": 0}
    keep, feats = [], []
    for s in smiles:
        f = _features(s, max_len)
        if isinstance(f, str):
            skipped[f] += 1
            continue
        keep.append(s)
        feats.append(f)
    n = len(keep)
    if n < 10:
        raise ValueError(f"only {n} usable molecules (skipped: {skipped})")
    # scaffold split: whole scaffold groups go to the test split until it holds its share
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(feats):
        groups.setdefault(f["scaffold"], []).append(i)
    order = list(groups.values())
    rng.shuffle(order)
    role = np.empty(n, dtype=object)
    n_test = int(round((1 - total) * n))
    test = []
    for g in sorted(order, key=len):  # small groups first: the test split stays diverse
        if len(test) + len(g) > n_test:
            break
        test.extend(g)
    test_set = set(test)
    train = np.array([i for i in range(n) if i not in test_set], dtype=int)
    rng.shuffle(train)
    role[test] = "test"
    shares = np.array([paired, molecule_only, spectrum_only]) / total
    cuts = np.round(np.cumsum(shares) * len(train)).astype(int)
    role[train[: cuts[0]]] = "paired"
    role[train[cuts[0]: cuts[1]]] = "molecule_only"
    role[train[cuts[1]:]] = "spectrum_only"
    if not (role == "paired").any():
        raise ValueError("no paired rows: increase n_molecules or paired")
    # views
    tokens = np.stack([f["tokens"] for f in feats])
    fp = np.stack([f["fp"] for f in feats])
    formula = np.stack([f["formula"] for f in feats]).astype(np.float32)
    sims = {p: FragmentSimulator(profile=p, noise=noise, seed=rng.integers(2**31)) for p in PROFILES}
    prof = np.array([profiles[i] for i in rng.integers(len(profiles), size=n)], dtype=object)
    ce = np.array([PROFILES[p].collision_energy for p in prof]) + rng.uniform(-ce_jitter, ce_jitter, n)
    spec = np.zeros((n, N_BINS), np.float32)
    precursor = np.zeros(n, np.float32)
    has_spec = role != "molecule_only"
    for i in np.nonzero(has_spec)[0]:
        sp = sims[prof[i]].simulate(keep[i], collision_energy=float(ce[i]))
        spec[i] = bin_spectrum(sp.peaks.mz, sp.peaks.intensities)
        precursor[i] = sp.get("precursor_mz")
    extra = {}
    if test_profile:
        t_idx = np.nonzero(role == "test")[0]
        held = np.zeros((n, N_BINS), np.float32)
        ce_h = np.array(ce)
        for i in t_idx:
            ce_h[i] = PROFILES[test_profile].collision_energy + rng.uniform(-ce_jitter, ce_jitter)
            sp = sims[test_profile].simulate(keep[i], collision_energy=float(ce_h[i]))
            held[i] = bin_spectrum(sp.peaks.mz, sp.peaks.intensities)
        extra = {"spec_heldout": held, "ce_heldout": ce_h.astype(np.float32)}
    avail = np.zeros((n, 3), bool)
    avail[:, MOL] = avail[:, FP] = role != "spectrum_only"
    avail[:, SPEC] = has_spec
    # the spy: spectrum-only rows lose every molecular view
    hidden = role == "spectrum_only"
    tokens[hidden] = 0
    fp[hidden] = 0
    formula[hidden] = 0
    out_smiles = [None if hidden[i] else keep[i] for i in range(n)]
    # molecule-only rows: a precursor is still a property of the molecule (its [M+H]+ m/z)
    from molspecflow.simulator import precursor_mz

    for i in np.nonzero(role == "molecule_only")[0]:
        precursor[i] = precursor_mz(keep[i])
    if sum(skipped.values()):
        log.info("make_dataset: skipped %s", skipped)
    return MolSpecDataset(tokens, fp, spec, precursor, ce.astype(np.float32), formula, avail, role, out_smiles,
                          prof, tok, skipped, extra)


def skeleton_targets(tokens: torch.Tensor, vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-skeleton mass ``(B,)`` and heavy-element counts ``(B, E)`` of token rows (the regulariser's targets)."""
    from molspecflow.chem import atom_weights

    _, masses, counts = token_table(vocab)
    m = torch.as_tensor(masses, dtype=torch.float32, device=tokens.device)
    c = torch.as_tensor(counts, dtype=torch.float32, device=tokens.device)
    w = atom_weights(torch.nn.functional.one_hot(tokens, len(masses)).float(), vocab)
    return (m[tokens] * w).sum(1), (c[tokens] * w[..., None]).sum(1)


# users' files -----------------------------------------------------------------------------------

class LoadedSpectra(list):
    """A list of ``matchms.Spectrum`` with ``skipped``: reason → list of record numbers (1-based)."""

    def __init__(self, items=(), skipped=None, path=None):
        super().__init__(items)
        self.skipped = skipped or {}
        self.path = path


def load_spectra(path) -> LoadedSpectra:
    """Read MS/MS spectra from an MGF, mzML or MassSpecGym TSV file.

    MGF and mzML go through ``matchms.importing``; a ``.tsv`` is read as MassSpecGym's table
    (``mzs``, ``intensities`` comma-separated, ``precursor_mz``, ``smiles``, ``adduct``, ...).
    Spectra without a precursor m/z or without peaks are skipped and counted by record number.

    Raises:
        FileNotFoundError: no such file. ValueError: an unknown extension.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no spectra file at {path}")
    ext = path.suffix.lower()
    if ext == ".mgf":
        from matchms.importing import load_from_mgf

        raw = list(load_from_mgf(str(path), metadata_harmonization=False))
    elif ext in (".mzml", ".mzxml"):
        import importlib.util

        if importlib.util.find_spec("psims") is None:  # pyteomics reads PSI formats through it
            raise ImportError("reading mzML needs the 'psims' package (pip install psims); MGF and MassSpecGym "
                              ".tsv need nothing more")
        from matchms.importing import load_from_mzml

        raw = list(load_from_mzml(str(path), metadata_harmonization=False))
    elif ext == ".tsv":
        raw = _load_massspecgym(path)
    else:
        raise ValueError(f"unknown spectra format {ext!r}: expected .mgf, .mzML or a MassSpecGym .tsv")
    out, skipped = [], {"no_precursor": [], "no_peaks": []}
    for i, s in enumerate(raw, start=1):
        if s is None:
            skipped.setdefault("unreadable", []).append(i)
            continue
        prec = s.get("precursor_mz")
        if prec is None and s.get("pepmass"):
            prec = s.get("pepmass")[0] if isinstance(s.get("pepmass"), (tuple, list)) else s.get("pepmass")
        try:
            prec = float(prec) if prec is not None else None
        except (TypeError, ValueError):
            prec = None
        if prec is None or not np.isfinite(prec) or prec <= 0:
            skipped["no_precursor"].append(i)
            continue
        if s.peaks is None or len(s.peaks.mz) == 0:
            skipped["no_peaks"].append(i)
            continue
        s.set("precursor_mz", prec)
        out.append(s)
    n_skip = sum(len(v) for v in skipped.values())
    if n_skip:
        log.warning("load_spectra(%s): skipped %d spectra %s", path, n_skip,
                    {k: v[:10] for k, v in skipped.items() if v})
    return LoadedSpectra(out, skipped, path)


def _load_massspecgym(path: Path) -> list:
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            try:
                mz = np.array([float(x) for x in row.get("mzs", "").split(",") if x.strip()])
                it = np.array([float(x) for x in row.get("intensities", "").split(",") if x.strip()])
            except ValueError:
                out.append(None)
                continue
            if mz.size != it.size:
                out.append(None)
                continue
            order = np.argsort(mz)
            meta = {k: v for k, v in row.items() if k not in ("mzs", "intensities") and v not in (None, "")}
            if "precursor_mz" in meta:
                try:
                    meta["precursor_mz"] = float(meta["precursor_mz"])
                except ValueError:
                    meta.pop("precursor_mz")
            out.append(Spectrum(mz=mz[order], intensities=it[order], metadata=meta, metadata_harmonization=False))
    return out


def spectra_arrays(spectra, default_ce: float = 30.0) -> dict:
    """Binned vectors, precursors and collision energies of ``matchms.Spectrum`` s.

    Raises:
        ValueError: a spectrum without a precursor m/z or without peaks (``load_spectra`` skips those).
    """
    for i, s in enumerate(spectra):
        if not isinstance(s, Spectrum):
            raise TypeError(f"spectra[{i}] is a {type(s).__name__}, not a matchms.Spectrum")
        prec = s.get("precursor_mz")
        if not isinstance(prec, (int, float)) or not np.isfinite(prec) or prec <= 0:
            raise ValueError(f"spectra[{i}] has no usable precursor_mz ({prec!r})")
        if len(s.peaks.mz) == 0:
            raise ValueError(f"spectra[{i}] has no peaks")
    spec = np.stack([bin_spectrum(s.peaks.mz, s.peaks.intensities) for s in spectra]) if spectra else \
        np.zeros((0, N_BINS), np.float32)
    prec = np.array([float(s.get("precursor_mz")) for s in spectra], np.float32)
    ce = []
    for s in spectra:
        try:
            ce.append(float(s.get("collision_energy")))
        except (TypeError, ValueError):
            ce.append(default_ce)
    return {"spec": spec, "precursor": prec, "ce": np.array(ce, np.float32)}


__all__ = ["ELEMENTS", "LoadedSpectra", "MolSpecDataset", "N_BINS", "bin_spectrum", "load_spectra", "make_dataset",
           "spectra_arrays", "unbin_spectrum"]
