"""Data: the MOSES splits (read through :mod:`paperworks.moses`), users' SMILES files, and graph tensors."""

from __future__ import annotations

import csv
import gzip
import io
import logging
from pathlib import Path

import torch
from rdkit import Chem

from paperworks.moses import load_moses, moses_path  # noqa: F401 (molhit.data.load_moses, re-exported)

log = logging.getLogger(__name__)
# MOSES's metric code (molsets 0.3.1), vendored for molhit.molsets_ref; the splits ship in paperworks
MOSES_DIR = Path(__file__).resolve().parent / "_vendor" / "moses"
INSTALL = "pip install --force-reinstall paperworks-molhit"


def read_smiles_file(path) -> tuple[list[str], int]:
    """Read a SMILES file (``.csv`` with a ``SMILES``/``smiles`` column, or one SMILES per line).

    Returns:
        ``(smiles, n_invalid)``: the parsable SMILES and how many rows were skipped.

    Raises:
        FileNotFoundError: no such file. ValueError: the file holds no SMILES at all.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"path: {path} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if "," in first or first.strip().lower() == "smiles":
        # a CSV (quoted fields may hold commas): parsed with the csv module, the SMILES column by name
        rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
        low = [h.strip().lower() for h in rows[0]]
        col = low.index("smiles") if "smiles" in low else 0
        lines = [r[col].strip() if col < len(r) else "" for r in rows[1:]]
    else:
        lines = [ln.split()[0] for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"path: {path} holds no SMILES")
    good = [s for s in lines if Chem.MolFromSmiles(s) is not None]
    bad = len(lines) - len(good)
    if bad:
        log.warning("%s: skipped %d invalid SMILES of %d", path, bad, len(lines))
    if not good:
        raise ValueError(f"path: {path} holds no valid SMILES ({bad} invalid rows)")
    return good, bad


def graphs_from_smiles(smiles, encoding, *, max_atoms: int | None = None) -> dict:
    """Encode SMILES into padded tensors.

    Returns a dict with ``X`` (N, n) atom classes, ``E`` (N, n, n) bond classes, ``n_atoms`` (N,),
    ``smiles`` (the kept SMILES) and ``skipped`` (counts of ``invalid``, ``vocabulary``, ``too_large``).

    Raises:
        ValueError: ``smiles`` is empty, or nothing could be encoded.
    """
    smiles = list(smiles)
    if not smiles:
        raise ValueError("smiles must hold at least one SMILES")
    atoms, bonds, kept = [], [], []
    skipped = {"invalid": 0, "vocabulary": 0, "too_large": 0}
    for s in smiles:
        mol = Chem.MolFromSmiles(s) if isinstance(s, str) else None
        if mol is None:
            skipped["invalid"] += 1
            continue
        if max_atoms is not None and mol.GetNumAtoms() > max_atoms:
            skipped["too_large"] += 1
            continue
        try:
            a, b = encoding.encode(mol)
        except ValueError:
            skipped["vocabulary"] += 1
            continue
        atoms.append(a)
        bonds.append(b)
        kept.append(s)
    if not kept:
        raise ValueError(f"smiles: none of {len(smiles)} SMILES could be encoded ({skipped})")
    n = max(len(a) for a in atoms) if max_atoms is None else max_atoms
    X = torch.zeros(len(kept), n, dtype=torch.long)
    E = torch.zeros(len(kept), n, n, dtype=torch.long)
    for i, (a, b) in enumerate(zip(atoms, bonds)):
        X[i, : len(a)] = torch.from_numpy(a)
        E[i, : len(a), : len(a)] = torch.from_numpy(b)
    return {"X": X, "E": E, "n_atoms": torch.tensor([len(a) for a in atoms]), "smiles": kept, "skipped": skipped}
