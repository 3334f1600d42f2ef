"""A rule-based MS/MS fragment simulator on RDKit — a SIMULATOR, not real data.

Every spectrum this package trains and tests on in its experiments comes from here; every table
says so. The rules (inferred, not from the paper, which uses real spectra):

- ion: [M+H]+ only, precursor m/z = ``ExactMolWt`` + 1.007276;
- fragments: single cleavages of acyclic single bonds, paired cleavages (two acyclic single bonds:
  the three pieces) and ring openings (two bonds of one isolated ring: the two arcs with what
  hangs off them); each piece with the parent's hydrogens is a fragment of mass ``m_f``;
- ions at ``m_f + k·m_H + proton`` for hydrogen shifts ``k ∈ {-2..2}``, and neutral losses
  (H2O, NH3, CO, CO2) from the precursor and the single-cleavage fragments that contain the atoms;
- intensities: a weight per cleaved bond (C–heteroatom > benzylic > C–C; ring openings and
  paired cleavages weaker) × a collision-energy window over the fragment's mass fraction
  (higher energy → smaller fragments, less precursor) × charge retention (N-containing pieces);
- observation model (``noise=True``): peak dropout, ppm m/z jitter, log-normal intensity noise,
  chemical-noise peaks, relative-intensity floor; ion traps also cut below 0.28 × precursor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matchms import Spectrum
from rdkit import Chem

from molspecflow.chem import H_MASS, PROTON, canonical

#: neutral losses: name → (mass, element counts needed as (C, N, O))
NEUTRAL_LOSSES = {
    "H2O": (2 * H_MASS + 15.99491461956, (0, 0, 1)),
    "NH3": (3 * H_MASS + 14.0030740048, (0, 1, 0)),
    "CO": (12.0 + 15.99491461956, (1, 0, 1)),
    "CO2": (12.0 + 2 * 15.99491461956, (1, 0, 2)),
}
H_SHIFTS = np.array([-2, -1, 0, 1, 2])
MIN_MZ = 40.0  # nothing lighter is recorded
_FRAGMENTS: dict[str, tuple] = {}  # the noise-free tables, shared by every simulator in the process


@dataclass(frozen=True)
class Profile:
    """An 'instrument': its observation model and fragmentation preferences."""

    ppm: float               # m/z jitter (standard deviation, ppm)
    dropout: float           # probability a fragment peak is missed
    intensity_sigma: float   # log-normal intensity noise
    noise_peaks: float       # mean number of chemical-noise peaks
    collision_energy: float  # default collision energy (eV)
    h_shift: tuple           # weights of H shifts -2..2
    paired: float            # weight of secondary (paired) cleavages
    losses: float            # weight of neutral losses
    low_mass_cutoff: float   # fraction of the precursor m/z below which nothing is seen


PROFILES = {
    "qtof": Profile(10.0, 0.10, 0.20, 4.0, 35.0, (0.1, 0.35, 1.0, 0.35, 0.1), 0.5, 1.0, 0.0),
    "orbitrap": Profile(5.0, 0.05, 0.10, 2.0, 30.0, (0.05, 0.5, 1.0, 0.2, 0.05), 0.7, 0.7, 0.0),
    "iontrap": Profile(10.0, 0.15, 0.30, 6.0, 25.0, (0.02, 0.2, 1.0, 0.5, 0.2), 0.15, 3.0, 0.28),
}


def precursor_mz(smiles: str, adduct: str = "[M+H]+") -> float:
    """Precursor m/z of ``smiles`` as [M+H]+: monoisotopic mass + 1.007276."""
    _check_adduct(adduct)
    mol = Chem.MolFromSmiles(smiles) if isinstance(smiles, str) else None
    if mol is None:
        raise ValueError(f"invalid SMILES: {smiles!r}")
    from rdkit.Chem.Descriptors import ExactMolWt

    return ExactMolWt(mol) + PROTON


def _check_adduct(adduct):
    if adduct != "[M+H]+":
        raise ValueError(f"the simulator models [M+H]+ only, got adduct {adduct!r}")


class FragmentSimulator:
    """Rule-based [M+H]+ MS/MS simulator (see the module docstring for the rules).

    Args:
        profile: ``"qtof"``, ``"orbitrap"`` or ``"iontrap"``.
        noise: apply the observation model; ``False`` gives the noise-free fragment spectrum.
        seed: seed of the observation noise.
        collision_energy: default energy (eV); the profile's when ``None``.

    Example:
        >>> sim = FragmentSimulator(profile="qtof", noise=False)
        >>> spec = sim.simulate("CCO")
        >>> round(spec.get("precursor_mz"), 4)
        47.0491
    """

    def __init__(self, *, profile: str = "qtof", noise: bool = True, seed: int | None = None,
                 collision_energy: float | None = None):
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
        if not isinstance(noise, bool):
            raise TypeError(f"noise must be a bool, got {type(noise).__name__}")
        self.profile_name = profile
        self.profile = PROFILES[profile]
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        ce = self.profile.collision_energy if collision_energy is None else collision_energy
        if isinstance(ce, bool) or not isinstance(ce, (int, float)) or not np.isfinite(ce) or not 0 < ce <= 200:
            raise ValueError(f"collision_energy must be a number in (0, 200] eV, got {collision_energy!r}")
        self.collision_energy = float(ce)

    # the noise-free fragment table -------------------------------------------------------------

    def fragments(self, smiles: str) -> tuple[np.ndarray, np.ndarray, dict]:
        """Noise-free fragment table: ``(fragment masses, weights, info)`` before H shifts/proton."""
        key = smiles
        if key in _FRAGMENTS:
            return _FRAGMENTS[key]
        mol = Chem.MolFromSmiles(smiles) if isinstance(smiles, str) else None
        if mol is None:
            raise ValueError(f"invalid SMILES: {smiles!r}")
        if any(a.GetFormalCharge() != 0 for a in mol.GetAtoms()):
            raise ValueError(f"charged molecules are not simulated as [M+H]+: {smiles!r}")
        out = _fragment_table(mol)
        if len(_FRAGMENTS) > 200_000:
            _FRAGMENTS.clear()
        _FRAGMENTS[key] = out
        return out

    def peaks(self, smiles: str, collision_energy: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Noise-free ``(mz, intensity, precursor_mz)``, intensities scaled to a maximum of 1."""
        masses, weights, info = self.fragments(smiles)
        p = self.profile
        ce = self.collision_energy if collision_energy is None else float(collision_energy)
        M = info["mass"]
        # collision energy: a window over the mass fraction, moving to small fragments as energy rises
        centre = float(np.clip(1.0 - ce / 70.0, 0.1, 0.9))
        frac = masses / M
        w = weights * np.exp(-((frac - centre) ** 2) / 0.08) * np.where(info["kind"] == 1, p.paired, 1.0)
        w = w * np.where(info["kind"] == 2, 0.6 * p.paired + 0.2, 1.0)
        hs = np.asarray(p.h_shift)
        mz = (masses[:, None] + H_SHIFTS[None, :] * H_MASS + PROTON).ravel()
        inten = (w[:, None] * hs[None, :]).ravel()
        # neutral losses from the precursor and single-cleavage fragments
        prec = M + PROTON
        lmz, lint = [], []
        parent_loss = p.losses * 0.3 * np.exp(-ce / 40.0)
        for _, (dm, need) in NEUTRAL_LOSSES.items():
            ok = np.all(info["cno"] >= np.asarray(need), axis=1) & (info["kind"] == 0)
            lmz.append(masses[ok] + PROTON - dm)
            lint.append(0.3 * p.losses * w[ok])
            if np.all(info["cno_parent"] >= np.asarray(need)):
                lmz.append(np.array([prec - dm]))
                lint.append(np.array([parent_loss]))
        mz = np.concatenate([mz, *lmz, [prec]])
        inten = np.concatenate([inten, *lint, [np.exp(-ce / 15.0) * (1.0 + w.max(initial=0.0))]])
        keep = (mz >= MIN_MZ) & (inten > 0) & (mz <= prec + 1e-6)
        mz, inten = mz[keep], inten[keep]
        mz, inten = _merge(mz, inten, tol=1e-4)
        return mz, inten / inten.max(), prec

    # the observed spectrum ----------------------------------------------------------------------

    def simulate(self, smiles: str, *, adduct: str = "[M+H]+", collision_energy: float | None = None) -> Spectrum:
        """A simulated MS/MS spectrum of ``smiles`` as a ``matchms.Spectrum``.

        Metadata: ``precursor_mz``, ``charge`` 1, ``adduct``, ``collision_energy``,
        ``instrument_type`` (the profile), ``smiles`` (canonical) and ``simulated`` True.

        Raises:
            ValueError: invalid SMILES, charged molecule, or an adduct other than ``[M+H]+``.
        """
        _check_adduct(adduct)
        ce = self.collision_energy if collision_energy is None else collision_energy
        mz, inten, prec = self.peaks(smiles, ce)
        p = self.profile
        if self.noise:
            rng = self.rng
            is_prec = np.isclose(mz, prec, atol=1e-6)
            keep = is_prec | (rng.random(mz.size) >= p.dropout)
            mz, inten = mz[keep], inten[keep]
            inten = inten * rng.lognormal(0.0, p.intensity_sigma, mz.size)
            mz = mz * (1.0 + rng.normal(0.0, p.ppm * 1e-6, mz.size))
            k = rng.poisson(p.noise_peaks)
            if k:
                mz = np.concatenate([mz, rng.uniform(min(50.0, prec / 2), prec, k)])
                inten = np.concatenate([inten, rng.uniform(0.005, 0.05, k) * inten.max()])
            if p.low_mass_cutoff:
                keep = mz >= p.low_mass_cutoff * prec
                mz, inten = mz[keep], inten[keep]
            inten = inten / inten.max()
            keep = inten >= 0.005
            mz, inten = mz[keep], inten[keep]
        order = np.argsort(mz)
        meta = {"precursor_mz": float(prec), "charge": 1, "adduct": adduct, "ionmode": "positive",
                "collision_energy": float(ce), "instrument_type": self.profile_name,
                "smiles": canonical(smiles), "simulated": True}
        return Spectrum(mz=mz[order].astype(float), intensities=inten[order].astype(float), metadata=meta,
                        metadata_harmonization=False)


def _merge(mz, inten, tol):
    order = np.argsort(mz)
    mz, inten = mz[order], inten[order]
    new = np.concatenate([[True], np.diff(mz) > tol])
    groups = np.cumsum(new) - 1
    out_i = np.bincount(groups, weights=inten)
    out_m = mz[new]
    return out_m, out_i


def _atom_table(mol):
    from molspecflow.chem import _PT

    n = mol.GetNumAtoms()
    mass = np.array([_PT.GetMostCommonIsotopeMass(a.GetSymbol()) + a.GetTotalNumHs() * H_MASS
                     for a in mol.GetAtoms()])
    cno = np.zeros((n, 3))
    for a in mol.GetAtoms():
        s = a.GetSymbol()
        if s in ("C", "N", "O"):
            cno[a.GetIdx(), ("C", "N", "O").index(s)] = 1
    return mass, cno


def _bond_weight(b) -> float:
    a1, a2 = b.GetBeginAtom(), b.GetEndAtom()
    s = {a1.GetSymbol(), a2.GetSymbol()}
    if s != {"C"}:
        w = 1.0
        if s == {"C", "N"} and any(n.GetSymbol() == "O" for a in (a1, a2) for n in a.GetNeighbors()
                                   if a.GetSymbol() == "C"):
            w = 1.3  # amide-like C–N
    elif a1.GetIsAromatic() or a2.GetIsAromatic():
        w = 0.7      # benzylic
    else:
        w = 0.35
    return w


def _fragment_table(mol):
    """Fragment masses, weights and kinds (0 single, 1 paired, 2 ring opening), vectorised."""
    n = mol.GetNumAtoms()
    mass, cno = _atom_table(mol)
    M = float(mass.sum())
    adj = [[] for _ in range(n)]
    for b in mol.GetBonds():
        adj[b.GetBeginAtomIdx()].append((b.GetEndAtomIdx(), b.GetIdx()))
        adj[b.GetEndAtomIdx()].append((b.GetBeginAtomIdx(), b.GetIdx()))
    acyclic = [b for b in mol.GetBonds() if not b.IsInRing()]
    sides_all = np.zeros((len(acyclic), n), dtype=bool)   # atoms on the begin-atom side of each bond
    for j, b in enumerate(acyclic):
        start, skip = b.GetBeginAtomIdx(), b.GetIdx()
        stack, seen = [start], {start}
        while stack:
            a = stack.pop()
            for nb, bi in adj[a]:
                if bi != skip and nb not in seen:
                    seen.add(nb)
                    stack.append(nb)
        sides_all[j, list(seen)] = True
    single = np.array([b.GetBondType() == Chem.BondType.SINGLE for b in acyclic], dtype=bool)
    cut = [b for b, s in zip(acyclic, single) if s]
    sides = sides_all[single] if len(acyclic) else np.zeros((0, n), dtype=bool)
    bw = np.array([_bond_weight(b) for b in cut])
    m_side = sides @ mass
    c_side = sides.astype(float) @ cno
    masses = [m_side, M - m_side]
    weights = [bw, bw]
    kinds = [np.zeros(len(cut)), np.zeros(len(cut))]
    cnos = [c_side, cno.sum(0) - c_side]
    # paired cleavages of two acyclic single bonds: the two outer pieces and the middle one
    if len(cut) >= 2:
        i, j = np.triu_indices(len(cut), k=1)
        ends = np.array([[b.GetBeginAtomIdx(), b.GetEndAtomIdx()] for b in cut])
        # outer piece of bond i: its side that does not hold bond j
        i_has_j = sides[i, ends[j, 0]]
        j_has_i = sides[j, ends[i, 0]]
        a_i = np.where(i_has_j[:, None], ~sides[i], sides[i])
        a_j = np.where(j_has_i[:, None], ~sides[j], sides[j])
        m_ai, m_aj = a_i @ mass, a_j @ mass
        m_mid = M - m_ai - m_aj
        pw = 0.5 * bw[i] * bw[j]
        ok = m_mid > 0.5
        masses.append(m_mid[ok])
        weights.append(pw[ok])
        kinds.append(np.ones(int(ok.sum())))
        cnos.append(np.zeros((int(ok.sum()), 3)))
    # ring openings of isolated rings: two ring bonds cut, the two arcs with their substituents
    ri = mol.GetRingInfo()
    hang = mass.copy()  # an atom's mass plus everything hanging off it through acyclic bonds
    m_all = sides_all @ mass if len(acyclic) else np.zeros(0)
    for j, b in enumerate(acyclic):
        a, c = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        hang[a] += M - m_all[j]
        hang[c] += m_all[j]
    ring_m, ring_w = [], []
    for ring in ri.AtomRings():
        if any(ri.NumAtomRings(a) > 1 for a in ring):
            continue  # fused or spiro: not an isolated ring
        k = len(ring)
        h = hang[list(ring)]
        for s in range(k):
            for e in range(s + 2, s + k - 1):
                arc = [(s + 1 + t) % k for t in range(e - s)]
                ring_m.append(h[arc].sum())
                ring_w.append(0.3)
    if ring_m:
        masses.append(np.array(ring_m))
        weights.append(np.array(ring_w))
        kinds.append(np.full(len(ring_m), 2.0))
        cnos.append(np.zeros((len(ring_m), 3)))
    masses = np.concatenate(masses) if masses else np.zeros(0)
    # charge retention: pieces with nitrogen keep the proton more often
    info = {"mass": M, "kind": np.concatenate(kinds), "cno": np.concatenate(cnos), "cno_parent": cno.sum(0)}
    weights = np.concatenate(weights) * np.where(info["cno"][:, 1] > 0, 1.5, 1.0)
    return masses, weights, info
