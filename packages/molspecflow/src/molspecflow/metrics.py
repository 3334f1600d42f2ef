"""Annotation metrics: top-k exact match (InChIKey), max Tanimoto, formula match, validity, spectral cosine."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matchms import Spectrum

from molspecflow.chem import fingerprint, formula_of, inchikey, mol_of, tanimoto


def binned_cosine(a, b) -> np.ndarray:
    """Row-wise cosine of binned spectra given as square-root intensities ``(N, bins)`` (compared as intensities)."""
    a = np.clip(np.asarray(a, float), 0, None) ** 2
    b = np.clip(np.asarray(b, float), 0, None) ** 2
    num = (a * b).sum(-1)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


def annotation_metrics(predicted, true, *, ks=(1, 5, 10), tolerance: float = 0.5) -> dict:
    """Metrics of annotations against the truth.

    Molecules: ``predicted`` is one ranked list of SMILES per query, ``true`` one SMILES per query;
    returns ``top{k}`` (exact match by InChIKey among the first k), ``tanimoto@{k}`` (max Morgan
    Tanimoto among the first k), ``formula@1`` / ``formula@{kmax}`` (share of queries whose
    first / any prediction has the true formula) and ``validity`` (parseable predictions).

    Spectra: ``predicted`` and ``true`` are ``matchms.Spectrum`` lists; returns ``cosine``, the mean
    matchms ``CosineGreedy`` score (``tolerance`` in Da) and its per-pair values.
    MCES (myopic-mces) is optional and not computed here.
    """
    predicted, true = list(predicted), list(true)
    if len(predicted) != len(true):
        raise ValueError(f"predicted ({len(predicted)}) and true ({len(true)}) differ in length")
    if not true:
        raise ValueError("no queries")
    if all(isinstance(x, Spectrum) for x in [*predicted, *true]):
        from matchms.similarity import CosineGreedy

        cg = CosineGreedy(tolerance=tolerance)
        scores = np.array([float(cg.pair(p, t)["score"]) for p, t in zip(predicted, true)])
        return {"cosine": float(scores.mean()), "cosine_per_pair": scores.tolist()}
    for p in predicted:
        if isinstance(p, str) or not isinstance(p, Sequence):
            raise TypeError("predicted: one ranked list of SMILES per query")
    kmax = max(ks)
    out = {f"top{k}": [] for k in ks} | {f"tanimoto@{k}": [] for k in ks}
    out |= {"formula@1": [], f"formula@{kmax}": [], "validity": []}
    for preds, t in zip(predicted, true):
        tm = mol_of(t)
        if tm is None:
            raise ValueError(f"true SMILES {t!r} is invalid")
        tkey, tform, tfp = inchikey(t), formula_of(tm), fingerprint(tm)
        mols = [mol_of(p) if isinstance(p, str) else None for p in preds[:kmax]]
        keys = [inchikey(p) if m is not None else None for p, m in zip(preds, mols)]
        tans = [tanimoto(fingerprint(m), tfp) if m is not None else 0.0 for m in mols]
        forms = [formula_of(m) if m is not None else None for m in mols]
        for k in ks:
            out[f"top{k}"].append(float(tkey in keys[:k]))
            out[f"tanimoto@{k}"].append(max(tans[:k], default=0.0))
        out["formula@1"].append(float(bool(forms) and forms[0] == tform))
        out[f"formula@{kmax}"].append(float(tform in forms))
        out["validity"].append(float(np.mean([m is not None for m in mols])) if mols else 0.0)
    return {k: float(np.mean(v)) for k, v in out.items()}
