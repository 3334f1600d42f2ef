"""``grace decompose data.path=FILE [dictionary.path=FILE] [l0=4] [model=grace.pt]``: decompose a user's embeddings.

Input files (``.npz``, read with ``allow_pickle=False``):

- ``data.path``: ``image_embeddings`` (n, d) — e.g. CLIP image embeddings. Rows holding NaN/inf are skipped
  and counted. It may also hold the dictionary (``concept_embeddings``, ``concepts``).
- ``dictionary.path`` (optional, overrides a dictionary inside ``data.path``): ``concept_embeddings`` (C, d),
  text embeddings of the concepts (e.g. template-averaged CLIP text embeddings), and ``concepts`` (C,) names.
- ``model`` (optional): a saved :class:`grace.GRACE` (``grace.pt`` of an earlier run); its dictionary is used and
  nothing is fitted (``dictionary.path`` must then be unset).

Writes into the run directory ``coefficients.npz`` (``coefficients`` (n_kept, C), ``concepts`` (C,),
``rows`` (n_kept,) indices of the kept rows in ``image_embeddings``, ``skipped_rows``), ``top_concepts.csv``
(row, rank, concept, coefficient; the non-zero concepts of each kept row, largest first) and ``grace.pt``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from grace.decomposer import GRACE
from grace.dictionary import ConceptDictionary
from paperworks import Claim, check_int
from paperworks.hydra_glue import ConfigError


def _read_npz(path, what: str) -> dict:
    p = Path(str(path))
    if not p.is_file():
        raise ConfigError(f"{what}: no file at {p}")
    try:
        with np.load(p, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (ValueError, OSError) as e:
        raise ConfigError(f"{what}: cannot read {p} as an .npz without pickles ({e})") from None


def _numeric_2d(a, name: str) -> np.ndarray:
    try:
        a = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a numeric array") from None
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ConfigError(f"{name} must have shape (n, d) with n, d >= 1, got {a.shape}")
    return a


def _dictionary_from(arrays: dict, source: str) -> ConceptDictionary:
    missing = [k for k in ("concept_embeddings", "concepts") if k not in arrays]
    if missing:
        raise ConfigError(f"{source} lacks the arrays {missing} (has {sorted(arrays)}); the dictionary needs "
                          "concept_embeddings (C, d) and concepts (C,) names")
    T = _numeric_2d(arrays["concept_embeddings"], f"{source}: concept_embeddings")
    if not np.all(np.isfinite(T)):
        raise ConfigError(f"{source}: concept_embeddings contains NaN or inf")
    names = np.asarray(arrays["concepts"])
    if names.ndim != 1:
        raise ConfigError(f"{source}: concepts must be a 1-d array of names, got shape {names.shape}")
    try:
        return ConceptDictionary([str(c) for c in names], T)
    except ValueError as e:
        raise ConfigError(f"{source}: {e}") from None


def run_decompose(cfg, out_dir: Path | None = None) -> dict:
    if cfg.data.get("path") is None:
        raise ConfigError("grace decompose needs data.path=FILE (.npz with image_embeddings (n, d))")
    data = _read_npz(cfg.data.path, "data.path")
    if "image_embeddings" not in data:
        raise ConfigError(f"data.path lacks the array 'image_embeddings' (has {sorted(data)})")
    Z = _numeric_2d(data["image_embeddings"], "image_embeddings")
    dict_path = cfg.get("dictionary", {}).get("path")
    l0 = cfg.get("l0")
    if l0 is not None:
        try:
            l0 = check_int(l0, "l0", minimum=1)
        except (TypeError, ValueError) as e:
            raise ConfigError(str(e)) from None

    if cfg.get("model") is not None:
        if dict_path is not None:
            raise ConfigError("give model= or dictionary.path=, not both (a saved model carries its dictionary)")
        try:
            g = GRACE.load(str(cfg.model))
        except (FileNotFoundError, ValueError) as e:
            raise ConfigError(f"model: {e}") from None
        if l0 is not None and l0 != g.target_l0:
            raise ConfigError(f"l0={l0} differs from the saved model's target_l0={g.target_l0} (refit instead)")
        dictionary, fitted = g.dictionary, False
    else:
        source = "dictionary.path" if dict_path is not None else "data.path"
        dictionary = _dictionary_from(_read_npz(dict_path, "dictionary.path") if dict_path is not None else data,
                                      source)
        l0 = 4 if l0 is None else l0
        if l0 > len(dictionary):
            raise ConfigError(f"l0={l0} exceeds the dictionary's {len(dictionary)} concepts")
        g, fitted = None, True
    if Z.shape[1] != dictionary.dim:
        raise ConfigError(f"image_embeddings have width {Z.shape[1]} but the concept dictionary's embeddings "
                          f"have width {dictionary.dim}")

    ok = np.isfinite(Z).all(1)
    rows = np.flatnonzero(ok)
    n_skipped = int((~ok).sum())
    if fitted and len(rows) < 2:
        raise ConfigError(f"fitting needs at least 2 finite image embeddings, got {len(rows)} "
                          f"({n_skipped} rows with NaN/inf skipped)")
    if len(rows) < 1:
        raise ConfigError(f"no finite image embeddings ({n_skipped} rows with NaN/inf skipped)")
    Zk = Z[rows]
    if fitted:
        gc = cfg.grace
        g = GRACE(dictionary, hidden=check_int(gc.hidden, "grace.hidden"), l1=float(gc.l1),
                  geometry_weight=float(gc.geometry_weight), target_l0=l0,
                  epochs=check_int(gc.epochs, "grace.epochs"),
                  batch_size=min(check_int(gc.batch_size, "grace.batch_size", minimum=2), max(len(rows), 2)),
                  lr=float(gc.lr), random_state=int(cfg.seed)).fit(Zk)
    C = g.transform(Zk)
    recon_cos = float(np.mean(np.sum(g.inverse_transform(C) * (Zk / np.linalg.norm(Zk, axis=1, keepdims=True)), 1)))
    concepts = list(g.dictionary.concepts)
    top = []
    for r, c in zip(rows, C, strict=True):
        nz = np.flatnonzero(c > 0)
        for rank, j in enumerate(nz[np.argsort(-c[nz], kind="stable")], start=1):
            top.append((int(r), rank, concepts[j], float(c[j])))
    if out_dir is not None:
        out = Path(out_dir)
        np.savez(out / "coefficients.npz", coefficients=C.astype(np.float32), concepts=np.array(concepts),
                 rows=rows, skipped_rows=np.flatnonzero(~ok))
        with open(out / "top_concepts.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["row", "rank", "concept", "coefficient"])
            w.writerows(top)
        g.save(out / "grace.pt")
    mean_l0 = float((C > 0).sum(1).mean())
    check = Claim.check("l0_matched", "Every kept embedding has exactly target_l0 non-zero coefficients.",
                        "mean L0", mean_l0, target=float(g.target_l0), tol=0.0)
    return {"claims": [], "checks": [check],
            "metrics": [{"rows": int(len(Z)), "kept_rows": int(len(rows)), "skipped_rows": n_skipped,
                         "concepts": len(concepts), "l0": int(g.target_l0), "mean_l0": mean_l0,
                         "reconstruction_cosine": recon_cos, "fitted": fitted}],
            "extra": {"data": str(cfg.data.path), "dictionary": None if dict_path is None else str(dict_path),
                      "model": None if cfg.get("model") is None else str(cfg.model),
                      "skipped_row_indices": np.flatnonzero(~ok)[:100].tolist()}}


__all__ = ["run_decompose"]
