"""Evaluation: concept AUROC against generator attributes (the offline proxy for "human perception"),
reconstruction cosine, zero-shot accuracy from reconstructions, geometry, consistency across positions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from grace.dictionary import _normalise, check_embeddings


def concept_auroc(C, concepts, attributes) -> float:
    """Mean over concepts named as an attribute value of AUROC(coefficient, attribute == value)."""
    scores = []
    for vals in attributes.values():
        vals = np.asarray(vals)
        for j, name in enumerate(concepts):
            pos = vals == name
            if 0 < pos.sum() < len(pos):
                scores.append(roc_auc_score(pos, C[:, j]))
    if not scores:
        raise ValueError("no concept matches an attribute value: attributes must be name arrays (e.g. 'red')")
    return float(np.mean(scores))


def geometry(Y, C, *, n_pairs_points: int = 400, knn: int = 10, seed: int = 0) -> dict:
    """Spearman ρ of pairwise cosine distances (centred embeddings vs coefficients) and kNN overlap."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(Y), min(n_pairs_points, len(Y)), replace=False)
    a, b = _normalise(Y[idx]), _normalise(C[idx] + 0.0)
    Sa, Sb = a @ a.T, b @ b.T
    iu = np.triu_indices(len(idx), 1)
    rho = spearmanr(1 - Sa[iu], 1 - Sb[iu]).statistic
    np.fill_diagonal(Sa, -np.inf)
    np.fill_diagonal(Sb, -np.inf)
    k = min(knn, len(idx) - 1)
    na = np.argsort(-Sa, 1)[:, :k]
    nb = np.argsort(-Sb + rng.uniform(0, 1e-9, Sb.shape), 1)[:, :k]  # random tie-break (ties among sparse codes)
    overlap = np.mean([len(set(x) & set(y)) / k for x, y in zip(na, nb, strict=True)])
    return {"geometry_spearman": float(np.nan_to_num(rho)), "knn_overlap": float(overlap)}


def position_consistency(C, concepts, attributes) -> float:
    """Share of the variance of the shape and colour coefficients explained by (shape, colour, size):
    1 when they do not change with position; mean over the shape/colour concepts that vary."""
    groups = np.array([f"{s}|{c}|{z}" for s, c, z in zip(attributes["shape"], attributes["colour"],
                                                           attributes["size"], strict=True)])
    cols = [j for j, n in enumerate(concepts) if n in set(np.asarray(attributes["shape"])) |
            set(np.asarray(attributes["colour"]))]
    out = []
    for j in cols:
        x = C[:, j].astype(float)
        tot = x.var()
        if tot < 1e-12:
            continue
        within = sum(((x[groups == g] - x[groups == g].mean()) ** 2).sum() for g in np.unique(groups)) / len(x)
        out.append(1 - within / tot)
    return float(np.mean(out)) if out else float("nan")


def zero_shot_accuracy(Z, class_embeddings, labels) -> float:
    """Accuracy of ``argmax_k cos(z, t_k)`` against ``labels`` (indices)."""
    return float(np.mean(np.argmax(_normalise(Z) @ _normalise(class_embeddings).T, 1) == np.asarray(labels)))


def evaluate(decomposer, Z, attributes, *, classifiers=None, seed: int = 0) -> dict:
    """All metrics of a fitted decomposer on embeddings ``Z`` with generator ``attributes`` (name arrays).

    ``classifiers``: ``{attribute: (class names, class text embeddings (K, d))}`` for zero-shot accuracy
    of the originals and of the reconstructions (``zs_kept`` = their ratio).
    """
    Z = check_embeddings(Z, "Z")
    n = len(Z)
    for k, v in attributes.items():
        if len(v) != n:
            raise ValueError(f"attributes[{k!r}] has {len(v)} entries for {n} embeddings")
    C = decomposer.transform(Z)
    Zhat = decomposer.inverse_transform(C)
    z = _normalise(Z)
    out = {"l0": float((C > 0).sum(1).mean()), "recon_cos": float(np.mean((z * Zhat).sum(1))),
           "min_coefficient": float(C.min()),
           "concept_auroc": concept_auroc(C, decomposer.dictionary.concepts, attributes)}
    out.update(geometry(z - decomposer.image_mean_, C, seed=seed))
    if {"shape", "colour", "size"} <= set(attributes):
        out["position_consistency"] = position_consistency(C, decomposer.dictionary.concepts, attributes)
    if classifiers:
        orig, rec = [], []
        for attr, (names, T) in classifiers.items():
            lab = np.searchsorted(np.asarray(names), attributes[attr], sorter=np.argsort(names))
            lab = np.argsort(names)[lab]
            orig.append(zero_shot_accuracy(z, T, lab))
            rec.append(zero_shot_accuracy(Zhat, T, lab))
            out[f"zs_{attr}_orig"], out[f"zs_{attr}_recon"] = orig[-1], rec[-1]
        out["zs_orig"], out["zs_recon"] = float(np.mean(orig)), float(np.mean(rec))
        out["zs_kept"] = out["zs_recon"] / max(out["zs_orig"], 1e-12)
    return out


def load_embeddings(path) -> dict:
    """Read an ``.npz`` of precomputed embeddings (e.g. from an open_clip model).

    Required arrays: ``image_embeddings`` (n, d), ``concept_embeddings`` (C, d), ``concepts`` (C,) names.
    Optional: any ``attr_<name>`` arrays of n attribute names. Returns a dict of arrays.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no embeddings file at {path}")
    with np.load(path, allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    missing = [k for k in ("image_embeddings", "concept_embeddings", "concepts") if k not in data]
    if missing:
        raise ValueError(f"{path} lacks the arrays {missing} (has {sorted(data)})")
    Z = check_embeddings(data["image_embeddings"], "image_embeddings")
    T = check_embeddings(data["concept_embeddings"], "concept_embeddings", width=Z.shape[1])
    if len(data["concepts"]) != len(T):
        raise ValueError(f"concepts has {len(data['concepts'])} names for {len(T)} concept embeddings")
    for k, v in data.items():
        if k.startswith("attr_") and len(v) != len(Z):
            raise ValueError(f"{k} has {len(v)} entries for {len(Z)} image embeddings")
    return data


def remove_concepts(C, concepts, names) -> np.ndarray:
    """Concept editing: a copy of coefficients ``C`` (n, C) with the columns of ``names`` set to 0.

    Decode the result with the decomposer's ``inverse_transform`` to get edited embeddings.
    """
    C = np.array(C, dtype=np.float32, copy=True)
    concepts = list(concepts)
    if C.ndim != 2 or C.shape[1] != len(concepts):
        raise ValueError(f"C must have shape (n, {len(concepts)}), got {C.shape}")
    unknown = [n for n in names if n not in concepts]
    if unknown:
        raise ValueError(f"unknown concepts {unknown}")
    C[:, [concepts.index(n) for n in names]] = 0.0
    return C
