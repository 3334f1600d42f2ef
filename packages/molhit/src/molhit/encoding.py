"""Atom encodings: molecule <-> (atom tokens, bond-type matrix), and back through RDKit.

Two encodings share one class:

- :func:`decoupled_encoding` (MolHIT's *decoupled atom encoding*, DAE): atom tokens split by
  chemical role — aromatic vs aliphatic C/N/O/S, pyrrole-type ``[nH]``, and charge states
  (``[N+]``, ``[n+]``, ``[nH+]``, ``[O-]``, ``[N-]``). Each token also belongs to a coarser
  *group* (carbon, nitrogen, oxygen, sulfur, halogen): the projection Φ that the
  hierarchical diffusion noises through.
- :func:`digress_encoding` (the DiGress-style baseline): element types only
  (C, N, O, F, S, Cl, Br), neutral, hydrogens inferred from valence.

Bonds are kekulised (none, single, double, triple) for both, as in the brief's miniature;
``digress_encoding(aromatic_bonds=True)`` gives DiGress's own choice of an aromatic bond type.
Decoding builds an RDKit ``RWMol`` and sanitises it with no valence fixing. The token list
and groups are this package's reading of the abstract/brief (inferred, not the paper's list).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rdkit import Chem, RDLogger

RDLogger.DisableLog("rdApp.*")

_BOND = {
    "single": Chem.BondType.SINGLE, "double": Chem.BondType.DOUBLE,
    "triple": Chem.BondType.TRIPLE, "aromatic": Chem.BondType.AROMATIC,
}


@dataclass(frozen=True)
class AtomToken:
    """One atom token: element, aromatic flag, formal charge, explicit hydrogens (None: from valence)."""

    symbol: str
    aromatic: bool = False
    charge: int = 0
    num_h: int | None = None

    @property
    def name(self) -> str:
        s = self.symbol.lower() if self.aromatic else self.symbol
        if self.charge == 0 and self.num_h is None and len(s) <= 2:
            return s
        h = "" if not self.num_h else ("H" if self.num_h == 1 else f"H{self.num_h}")
        c = "" if self.charge == 0 else ("+" if self.charge == 1 else "-" if self.charge == -1 else f"{self.charge:+d}")
        return f"[{s}{h}{c}]"


class AtomEncoding:
    """A vocabulary of atom tokens and bond types with an RDKit encoder/decoder.

    Args:
        name: a label.
        tokens: the atom tokens (index = class id).
        groups: group names; ``phi[i]`` is the group of token ``i`` (the projection Φ).
        phi: one group index per token.
        aromatic_bonds: keep aromatic bonds as their own type instead of kekulising.
        decoupled: tokens carry aromaticity, charge and ``[nH]`` (DAE); otherwise element only.

    Example:
        >>> enc = decoupled_encoding()
        >>> atoms, bonds = enc.encode("c1cc[nH]c1")
        >>> Chem.MolToSmiles(enc.decode(atoms, bonds))
        'c1cc[nH]c1'
    """

    def __init__(self, name: str, tokens, groups, phi, *, aromatic_bonds: bool = False, decoupled: bool = True):
        if len(tokens) != len(phi):
            raise ValueError(f"phi must give one group per token: {len(tokens)} tokens, {len(phi)} groups")
        if any(not 0 <= g < len(groups) for g in phi):
            raise ValueError(f"phi entries must index groups (0..{len(groups) - 1})")
        self.name = name
        self.tokens = list(tokens)
        self.groups = list(groups)
        self.phi = np.asarray(phi, dtype=np.int64)
        self.aromatic_bonds = aromatic_bonds
        self.decoupled = decoupled
        self.bond_names = ["none", "single", "double", "triple"] + (["aromatic"] if aromatic_bonds else [])
        self._bond_index = {_BOND[b]: i for i, b in enumerate(self.bond_names) if b != "none"}
        self._index = {t: i for i, t in enumerate(self.tokens)}

    @property
    def num_atom_types(self) -> int:
        return len(self.tokens)

    def to_dict(self) -> dict:
        """Plain types only (lists, str, int, bool, None): storable with ``torch.save`` and loadable with
        ``weights_only=True``."""
        return {"name": self.name, "groups": list(self.groups), "phi": [int(g) for g in self.phi],
                "tokens": [{"symbol": t.symbol, "aromatic": bool(t.aromatic), "charge": int(t.charge),
                            "num_h": None if t.num_h is None else int(t.num_h)} for t in self.tokens],
                "aromatic_bonds": bool(self.aromatic_bonds), "decoupled": bool(self.decoupled)}

    @classmethod
    def from_dict(cls, d: dict) -> AtomEncoding:
        """The encoding :meth:`to_dict` described."""
        try:
            tokens = [AtomToken(t["symbol"], bool(t["aromatic"]), int(t["charge"]), t["num_h"]) for t in d["tokens"]]
            return cls(d["name"], tokens, d["groups"], d["phi"], aromatic_bonds=bool(d["aromatic_bonds"]),
                       decoupled=bool(d["decoupled"]))
        except (KeyError, TypeError) as e:
            raise ValueError(f"not an AtomEncoding description: {e!r}") from None

    @property
    def num_bond_types(self) -> int:
        """Bond classes including 'none' (class 0)."""
        return len(self.bond_names)

    # encoding ------------------------------------------------------------------------
    def _key(self, atom: Chem.Atom) -> AtomToken:
        if not self.decoupled:
            return AtomToken(atom.GetSymbol())
        arom, charge = atom.GetIsAromatic(), atom.GetFormalCharge()
        num_h = 1 if (arom and atom.GetSymbol() == "N" and charge == 0 and atom.GetTotalNumHs() == 1) else None
        return AtomToken(atom.GetSymbol(), arom, charge, num_h)

    def encode(self, mol) -> tuple[np.ndarray, np.ndarray]:
        """Molecule (RDKit ``Mol`` or SMILES) -> ``(atoms (n,), bonds (n, n))`` integer arrays.

        Raises:
            ValueError: unparsable SMILES, or an atom outside the vocabulary (named).
        """
        if isinstance(mol, str):
            m = Chem.MolFromSmiles(mol)
            if m is None:
                raise ValueError(f"mol: cannot parse SMILES {mol!r}")
            mol = m
        if not isinstance(mol, Chem.Mol):
            raise TypeError(f"mol must be an RDKit Mol or a SMILES string, got {type(mol).__name__}")
        atoms = np.empty(mol.GetNumAtoms(), dtype=np.int64)
        for a in mol.GetAtoms():
            key = self._key(a)
            if key not in self._index:
                raise ValueError(f"atom {key.name} (index {a.GetIdx()}) is not in the {self.name} vocabulary "
                                 f"{[t.name for t in self.tokens]}")
            atoms[a.GetIdx()] = self._index[key]
        work = Chem.Mol(mol)
        if not self.aromatic_bonds:
            Chem.Kekulize(work, clearAromaticFlags=True)
        bonds = np.zeros((len(atoms), len(atoms)), dtype=np.int64)
        for b in work.GetBonds():
            i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
            if b.GetBondType() not in self._bond_index:
                raise ValueError(f"bond {b.GetBondType()} between atoms {i} and {j} is not in {self.bond_names}")
            bonds[i, j] = bonds[j, i] = self._bond_index[b.GetBondType()]
        return atoms, bonds

    # decoding ------------------------------------------------------------------------
    def _build(self, atoms, bonds) -> Chem.RWMol:
        rw = Chem.RWMol()
        for t in atoms:
            tok = self.tokens[int(t)]
            a = Chem.Atom(tok.symbol)
            a.SetFormalCharge(tok.charge)
            if tok.num_h is not None:
                a.SetNumExplicitHs(tok.num_h)
            if self.aromatic_bonds and tok.aromatic:
                a.SetIsAromatic(True)
            rw.AddAtom(a)
        iu, ju = np.nonzero(np.triu(bonds, 1))
        for i, j in zip(iu.tolist(), ju.tolist()):
            b = int(bonds[i, j])
            if b:
                rw.AddBond(int(i), int(j), _BOND[self.bond_names[b]])
                if self.bond_names[b] == "aromatic":
                    rw.GetAtomWithIdx(int(i)).SetIsAromatic(True)
                    rw.GetAtomWithIdx(int(j)).SetIsAromatic(True)
        return rw

    def decode(self, atoms, bonds, *, lenient: bool = False):
        """``(atoms, bonds)`` -> sanitised RDKit ``Mol``, or ``None`` when invalid.

        Strict (default): the whole graph must sanitise with no fixing and be one connected
        component. ``lenient=True``: keep the largest connected fragment and sanitise that
        (the "largest fragment" validity that inflates graph-diffusion numbers).
        """
        atoms = np.asarray(atoms, dtype=np.int64)
        bonds = np.asarray(bonds, dtype=np.int64)
        if atoms.ndim != 1 or bonds.shape != (len(atoms), len(atoms)):
            raise ValueError(f"atoms must be (n,) and bonds (n, n), got {atoms.shape} and {bonds.shape}")
        if len(atoms) == 0:
            return None
        rw = self._build(atoms, bonds)
        frags = Chem.GetMolFrags(rw, asMols=False, sanitizeFrags=False)
        if len(frags) > 1:
            if not lenient:
                return None
            keep = max(frags, key=len)
            sub = np.asarray(keep)
            rw = self._build(atoms[sub], bonds[np.ix_(sub, sub)])
        mol = rw.GetMol()
        try:
            Chem.SanitizeMol(mol)
        except Exception:  # RDKit raises several sanitisation errors
            return None
        return mol

    def roundtrip(self, smiles: str) -> bool:
        """Does SMILES -> graph -> RDKit -> canonical SMILES give back the same molecule?"""
        ref = Chem.MolFromSmiles(smiles)
        if ref is None:
            raise ValueError(f"smiles: cannot parse {smiles!r}")
        try:
            atoms, bonds = self.encode(ref)
        except ValueError:
            return False
        mol = self.decode(atoms, bonds)
        return mol is not None and Chem.MolToSmiles(mol) == Chem.MolToSmiles(ref)

    def __repr__(self) -> str:
        return f"AtomEncoding({self.name!r}, tokens={[t.name for t in self.tokens]}, bonds={self.bond_names})"


def decoupled_encoding() -> AtomEncoding:
    """MolHIT's decoupled atom encoding (DAE): tokens by chemical role, grouped by element family."""
    T = AtomToken
    spec = [
        (T("C"), 0), (T("C", True), 0),
        (T("N"), 1), (T("N", True), 1), (T("N", True, 0, 1), 1),
        (T("N", False, 1), 1), (T("N", True, 1), 1), (T("N", False, -1), 1),
        (T("O"), 2), (T("O", True), 2), (T("O", False, -1), 2),
        (T("S"), 3), (T("S", True), 3),
        (T("F"), 4), (T("Cl"), 4), (T("Br"), 4),
    ]
    return AtomEncoding("decoupled", [t for t, _ in spec], ["carbon", "nitrogen", "oxygen", "sulfur", "halogen"],
                        [g for _, g in spec], decoupled=True)


def digress_encoding(*, aromatic_bonds: bool = False) -> AtomEncoding:
    """The DiGress-style baseline: element types C, N, O, F, S, Cl, Br; neutral atoms."""
    syms = ["C", "N", "O", "F", "S", "Cl", "Br"]
    phi = [0, 1, 2, 4, 3, 4, 4]
    return AtomEncoding("digress" + ("_aromatic" if aromatic_bonds else ""), [AtomToken(s) for s in syms],
                        ["carbon", "nitrogen", "oxygen", "sulfur", "halogen"], phi,
                        aromatic_bonds=aromatic_bonds, decoupled=False)


# MOSES has no charged molecules: a hand-written set to test charge states.
CHARGED_SMILES = [
    "C[N+](=O)[O-]", "O=[N+]([O-])c1ccccc1", "C[n+]1ccccc1", "CC(=O)[O-]", "C[N+](C)(C)C",
    "c1cc[nH+]cc1", "NCC(=O)[O-]", "[NH3+]CC(=O)[O-]", "Cc1cc[n+](C)cc1", "O=C([O-])c1ccccc1",
    "C[N-]S(=O)(=O)C", "CC[N+](=O)[O-]", "c1ccc2[nH]ccc2c1", "Cn1cc[n+](C)c1", "O=[N+]([O-])c1ccc(Cl)cc1",
]
