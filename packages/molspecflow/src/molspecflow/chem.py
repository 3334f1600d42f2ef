"""Molecular views: SELFIES tokens, Morgan bits, formulas, token masses, ``expected_mass``, formula decoys.

Masses are monoisotopic (RDKit's periodic table). A SELFIES token's mass is the mass of the atom it
writes plus the hydrogens written inside the token (``[NH1]``); branch, ring, padding and mask
tokens weigh 0. Implicit hydrogens are not in any token, so ``expected_mass`` of a molecule's own
tokens is its *skeleton* mass: ``ExactMolWt`` minus its implicit hydrogens.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
import selfies as sf
import torch
from rdkit import Chem, DataStructs, RDLogger
from rdkit.Chem import rdFingerprintGenerator, rdMolDescriptors

from paperworks import atomic_write_text, cache_dir

RDLogger.DisableLog("rdApp.*")

PAD, MASK = "[PAD]", "[MASK]"
#: elements counted in formulas (heavy atoms, then H)
ELEMENTS = ("C", "N", "O", "S", "F", "Cl", "Br", "I", "P", "B", "H")
HEAVY = ELEMENTS[:-1]
H_MASS = 1.00782503207
PROTON = 1.007276
N_BITS = 1024
_PT = Chem.GetPeriodicTable()
_TOKEN = re.compile(r"^\[([=#/\\]?)([A-Z][a-z]?)(H(\d))?([+-]\d)?\]$")


def default_vocab() -> list[str]:
    """``[PAD]``, ``[MASK]`` and SELFIES's semantically robust alphabet plus ``[NH1]`` (aromatic NH)."""
    return [PAD, MASK, *sorted(set(sf.get_semantic_robust_alphabet()) | {"[NH1]"})]


def token_table(vocab) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Tokens, their masses ``(V,)`` and their heavy-element counts ``(V, len(HEAVY))``."""
    tokens = _tokens_of(vocab)
    masses = np.zeros(len(tokens))
    counts = np.zeros((len(tokens), len(HEAVY)))
    for i, tok in enumerate(tokens):
        m = _TOKEN.match(tok)
        if not m or _index_len(tok):
            continue
        el, nh = m.group(2), int(m.group(4) or 0)
        masses[i] = _PT.GetMostCommonIsotopeMass(el) + nh * H_MASS
        if el in HEAVY:
            counts[i, HEAVY.index(el)] = 1.0
    return tokens, masses, counts


def _index_len(tok: str) -> int:
    """How many index tokens follow a SELFIES ``[BranchN]`` / ``[RingN]`` token (0 for others)."""
    m = re.match(r"^\[[=#]?(Branch|Ring)(\d)\]$", tok)
    return int(m.group(2)) if m else 0


def atom_weights(probs: torch.Tensor, vocab) -> torch.Tensor:
    """Probability ``(B, T)`` that each position holds an atom that the SELFIES decoder reads.

    SELFIES writes ``[BranchN]`` / ``[RingN]`` followed by N *index* tokens (``[C]`` there is a
    number, not a carbon), and the decoder stops at the first ``[PAD]``. With ``q_i`` the chance
    that position ``i`` is an index token (mean field over positions),
    ``q_i = min(1, Σ_{j=1..3} (1 - q_{i-j}) P_{i-j}(N ≥ j))`` and the weight is
    ``Π_{j<i} (1 - P_j([PAD])) · (1 - q_i)``. Exact on one-hot inputs; differentiable on soft ones.
    """
    tokens = _tokens_of(vocab)
    lens = torch.tensor([_index_len(t) for t in tokens], device=probs.device)
    ge = torch.stack([(lens >= j).to(probs.dtype) for j in (1, 2, 3)], 1)  # (V, 3)
    opens = probs @ ge                                                          # (B, T, 3)
    B, T, _ = probs.shape
    q = []
    for i in range(T):
        acc = probs.new_zeros(B)
        for j in (1, 2, 3):
            if i - j >= 0:
                acc = acc + (1 - q[i - j]) * opens[:, i - j, j - 1]
        q.append(acc.clamp(max=1.0))
    q = torch.stack(q, 1)
    pad = probs[..., tokens.index(PAD)] if PAD in tokens else probs.new_zeros(B, T)
    alive = torch.cumprod(torch.cat([probs.new_ones(B, 1), 1 - pad[:, :-1]], 1), 1)
    return alive * (1 - q)


def _tokens_of(vocab) -> list[str]:
    if isinstance(vocab, Mapping):
        idx = sorted(vocab.values())
        if idx != list(range(len(vocab))):
            raise ValueError("vocab: a token→index dict must map onto 0..V-1")
        out = [""] * len(vocab)
        for t, i in vocab.items():
            out[i] = t
        return out
    if isinstance(vocab, (str, bytes)) or not isinstance(vocab, Sequence):
        raise TypeError(f"vocab must be a list of tokens or a token→index dict, got {type(vocab).__name__}")
    return list(vocab)


def expected_mass(logits: torch.Tensor, vocab) -> torch.Tensor:
    """Expected monoisotopic mass of soft token sequences.

    .. math:: \\mathbb E[m] = \\sum_{pos} w_{pos} \\sum_v \\operatorname{softmax}(\\ell_{pos})_v \\, m(v)

    ``w_pos`` (:func:`atom_weights`) is the chance that the position is an atom the decoder reads:
    SELFIES index tokens after ``[BranchN]``/``[RingN]`` and everything after ``[PAD]`` weigh 0.

    Args:
        logits: unnormalised logits ``(B, T, V)``.
        vocab: the ``V`` tokens, as a list or a token→index dict; non-atom tokens weigh 0.

    Returns:
        ``(B,)``, differentiable in ``logits``. One-hot-like logits give the mass of the tokens.
    """
    if not isinstance(logits, torch.Tensor) or logits.ndim != 3:
        raise ValueError(f"logits must be a tensor of shape (B, T, V), got {getattr(logits, 'shape', type(logits))}")
    _, masses, _ = token_table(vocab)
    if logits.shape[-1] != len(masses):
        raise ValueError(f"logits have {logits.shape[-1]} classes but vocab has {len(masses)} tokens")
    m = torch.as_tensor(masses, dtype=logits.dtype, device=logits.device)
    p = logits.softmax(-1)
    return ((p @ m) * atom_weights(p, vocab)).sum(1)


# molecules ---------------------------------------------------------------------------------------

def mol_of(smiles) -> Chem.Mol | None:
    if not isinstance(smiles, str) or not smiles:
        return None
    return Chem.MolFromSmiles(smiles)


def canonical(smiles) -> str | None:
    mol = mol_of(smiles)
    return Chem.MolToSmiles(mol) if mol is not None else None


def inchikey(smiles) -> str | None:
    mol = mol_of(smiles)
    if mol is None:
        return None
    key = Chem.MolToInchiKey(mol)
    return key or None


def formula_of(mol_or_smiles) -> str | None:
    mol = mol_of(mol_or_smiles) if isinstance(mol_or_smiles, str) else mol_or_smiles
    return rdMolDescriptors.CalcMolFormula(mol) if mol is not None else None


def element_counts(mol) -> np.ndarray:
    """Counts of :data:`ELEMENTS` (H includes implicit hydrogens)."""
    out = np.zeros(len(ELEMENTS))
    for a in mol.GetAtoms():
        s = a.GetSymbol()
        if s in ELEMENTS:
            out[ELEMENTS.index(s)] += 1
        out[-1] += a.GetTotalNumHs()
    return out


_MORGAN = None


def fingerprint(mol) -> np.ndarray:
    """Morgan bits, radius 2, 1,024 bits, as uint8."""
    global _MORGAN
    if _MORGAN is None:
        _MORGAN = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=N_BITS)
    arr = np.zeros(N_BITS, dtype=np.uint8)
    DataStructs.ConvertToNumpyArray(_MORGAN.GetFingerprint(mol), arr)
    return arr


def tanimoto(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 1.0


class Tokenizer:
    """SELFIES tokens ↔ indices, padded with ``[PAD]`` to ``max_len``."""

    def __init__(self, vocab=None, max_len: int = 48):
        self.tokens = _tokens_of(vocab) if vocab is not None else default_vocab()
        if self.tokens[:2] != [PAD, MASK]:
            raise ValueError("vocab must start with [PAD], [MASK]")
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.max_len = int(max_len)

    def encode(self, smiles) -> np.ndarray | None:
        """Indices ``(max_len,)`` or ``None`` (invalid SMILES, out-of-vocabulary token, too long)."""
        mol = mol_of(smiles)
        if mol is None:
            return None
        try:
            s = sf.encoder(Chem.MolToSmiles(mol, kekuleSmiles=True))
        except Exception:  # selfies raises EncoderError on unsupported chemistry
            return None
        toks = list(sf.split_selfies(s)) if s else []
        if not toks or len(toks) > self.max_len or any(t not in self.index for t in toks):
            return None
        ids = np.zeros(self.max_len, dtype=np.int64)
        ids[: len(toks)] = [self.index[t] for t in toks]
        return ids

    def decode(self, ids) -> str | None:
        """Canonical SMILES of a token row (stops at the first ``[PAD]``), ``None`` if empty."""
        toks = []
        for i in np.asarray(ids).tolist():
            if i == 0:
                break
            if i != 1:
                toks.append(self.tokens[i])
        if not toks:
            return None
        try:
            smi = sf.decoder("".join(toks))
        except Exception:
            return None
        return canonical(smi) if smi else None


# formula-matched decoys ------------------------------------------------------------------------

def _index_path(index_size):
    return cache_dir("molspecflow") / f"formula_index_{index_size or 'all'}.tsv.gz"


@lru_cache(maxsize=4)
def formula_index(index_size: int | None = None, seed: int = 0) -> dict[str, list[str]]:
    """formula → MOSES train SMILES with that formula; built once and cached on disk.

    ``index_size``: a random subset of MOSES train (``None``: all 1.58M molecules, minutes to build).
    """
    from paperworks.moses import load_moses

    path = _index_path(index_size)
    index: dict[str, list[str]] = {}
    if path.exists():
        with gzip.open(path, "rt") as fh:
            for line in fh:
                f, s = line.rstrip("\n").split("\t")
                index.setdefault(f, []).append(s)
        return index
    for smi in load_moses("train", n=index_size, seed=seed):
        mol = mol_of(smi)
        if mol is not None:
            index.setdefault(rdMolDescriptors.CalcMolFormula(mol), []).append(smi)
    text = "".join(f"{f}\t{s}\n" for f, ss in index.items() for s in ss)
    tmp = path.with_suffix(".tmp")
    atomic_write_text(tmp, "")
    with gzip.open(tmp, "wt") as fh:
        fh.write(text)
    tmp.replace(path)
    return index


def formula_decoys(smiles: str, n: int = 64, *, index_size: int | None = None, seed: int = 0) -> list[str]:
    """Up to ``n`` distinct MOSES molecules with the query's formula, never the query (by InChIKey).

    Retrieval is trivial by precursor mass unless decoys share the formula, so candidates come
    from a formula index over MOSES train (:func:`formula_index`). Returns fewer than ``n`` when
    the index holds fewer; the draw is deterministic in ``seed``.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    mol = mol_of(smiles)
    if mol is None:
        raise ValueError(f"invalid SMILES: {smiles!r}")
    key = Chem.MolToInchiKey(mol)
    pool = formula_index(index_size).get(rdMolDescriptors.CalcMolFormula(mol), [])
    order = np.random.default_rng(seed).permutation(len(pool))
    out, seen = [], {key}
    for i in order:
        k = inchikey(pool[i])
        if k is None or k in seen:
            continue
        seen.add(k)
        out.append(pool[i])
        if len(out) == n:
            break
    return out
