"""Synthetic slides with planted tissue maps, and readers for real bags (CLAM/TRIDENT h5, .pt, .npz).

Synthetic design (after the paper brief): a G×G grid of patches, K = 5 tissue types (tumour, stroma,
lymphocyte, necrosis, normal), patch feature = type prototype + N(0, σ²) in 64-d (σ = 0.55 with
orthonormal prototypes: a nearest-prototype patch classifier is ≈ 75% right). Slides come in twins
with identical type counts; one twin's lymphocytes are drawn toward the tumour, the other's away
from it. So the type proportions are exactly matched between the twins and only the arrangement
differs. Labels (the boundary statistic b = the slide's lymphocyte–tumour contact share of edges
minus its twin's):
  infiltration: 1[b > 0] (the longer lymphocyte–tumour boundary of the twin pair);
  survival:     exponential times with hazard ∝ exp(b / b₀), independent exponential censoring;
  expression:   b / b₀ + N(0, 0.5²);
  control:      1[p_necrosis > p_normal] (proportions only).
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np
import torch
from scipy.ndimage import gaussian_filter
from torch_geometric.data import Data, InMemoryDataset

from tmevolve.graph import check_coords, patch_graph

log = logging.getLogger(__name__)

TYPES = ("tumour", "stroma", "lymphocyte", "necrosis", "normal")
TUMOUR, STROMA, LYMPH, NECROSIS, NORMAL = range(5)
LABELS = ("infiltration", "survival", "expression", "control")
TASK_OF = {"infiltration": "classification", "survival": "survival", "expression": "regression",
           "control": "classification"}
B_SCALE = 0.035  # typical |b| (contact share difference between twins) on 32×32 grids


def prototypes(dim: int = 64, seed: int = 1234) -> torch.Tensor:
    """K = 5 orthonormal type prototypes (fixed seed, label-agnostic): the concept vectors."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, len(TYPES))))
    return torch.as_tensor(q.T.copy(), dtype=torch.float32)


def grid_coords(grid: int) -> np.ndarray:
    ii, jj = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    return np.stack([ii.ravel(), jj.ravel()], axis=1).astype(np.float32)


def contact_share(tissue: np.ndarray, edge_index: np.ndarray, a: int = LYMPH, b: int = TUMOUR) -> float:
    """Share of (directed) graph edges joining type ``a`` and type ``b``."""
    s, d = tissue[edge_index[0]], tissue[edge_index[1]]
    return float(np.mean(((s == a) & (d == b)) | ((s == b) & (d == a))))


def _top(score: np.ndarray, free: np.ndarray, count: int) -> np.ndarray:
    idx = np.flatnonzero(free)
    return idx[np.argsort(-score[idx], kind="stable")[:count]]


def tissue_map(rng: np.random.Generator, grid: int, counts: np.ndarray, attract: float) -> np.ndarray:
    """A blob map with exact type ``counts``; ``attract`` > 0 draws lymphocytes to the tumour, < 0 away."""
    n = grid * grid
    fields = [gaussian_filter(rng.normal(size=(grid, grid)), grid / 8, mode="wrap").ravel() for _ in TYPES]
    fields = [(f - f.mean()) / (f.std() + 1e-12) for f in fields]
    t = np.full(n, -1)
    free = np.ones(n, bool)
    t[_top(fields[TUMOUR], free, counts[TUMOUR])] = TUMOUR
    free = t < 0
    near = gaussian_filter((t == TUMOUR).reshape(grid, grid).astype(float), 1.5).ravel()
    near = (near - near.mean()) / (near.std() + 1e-12)
    for k, score in ((LYMPH, fields[LYMPH] + attract * near), (STROMA, fields[STROMA]),
                     (NECROSIS, fields[NECROSIS])):
        t[_top(score, free, counts[k])] = k
        free = t < 0
    t[free] = NORMAL
    return t


class SyntheticSlides(InMemoryDataset):
    """Synthetic WSI bags on a ``grid``×``grid`` patch grid, as PyG ``Data`` (see the module docstring).

    Each item carries ``x`` (N, dim), ``edge_index`` (8-neighbour), ``pos`` (N, 2), ``y`` ((1,) or
    (1, 2) = time, event for survival), the planted ``tissue`` (N,) map, ``contact`` and ``proportions``.

    Args:
        n_slides: number of slides (twins: rounded up to even, then cut to ``n_slides``).
        grid: side of the patch grid.
        label: "infiltration", "survival", "expression" or "control".
        seed: generator seed.
        dim: feature width; noise: σ of the patch noise.
    """

    def __init__(self, n_slides: int, *, grid: int = 32, label: str = "infiltration", seed: int | None = None,
                 dim: int = 64, noise: float = 0.55):
        if isinstance(n_slides, bool) or not isinstance(n_slides, int) or n_slides < 1:
            raise ValueError(f"n_slides must be an int >= 1, got {n_slides!r}")
        if isinstance(grid, bool) or not isinstance(grid, int) or grid < 4:
            raise ValueError(f"grid must be an int >= 4, got {grid!r}")
        if label not in LABELS:
            raise ValueError(f"label must be one of {LABELS}, got {label!r}")
        if not (isinstance(noise, (int, float)) and np.isfinite(noise) and noise >= 0):
            raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
        super().__init__(None)
        self.label, self.grid, self.task = label, grid, TASK_OF[label]
        rng = np.random.default_rng(seed)
        protos = prototypes(dim)
        coords = grid_coords(grid)
        ei = patch_graph(coords)
        ei_np = ei.numpy()
        n = grid * grid
        items = []
        for _ in range((n_slides + 1) // 2):
            p = rng.dirichlet(np.full(len(TYPES), 4.0))
            counts = np.floor(p * n).astype(int)
            counts[NORMAL] += n - counts.sum()
            strength = rng.uniform(1.0, 3.0, size=2)
            twins = [tissue_map(rng, grid, counts, +strength[0]), tissue_map(rng, grid, counts, -strength[1])]
            if rng.random() < 0.5:
                twins = twins[::-1]
            cs = [contact_share(t, ei_np) for t in twins]
            for i, t in enumerate(twins):
                b = cs[i] - cs[1 - i]
                items.append((t, cs[i], b, counts / n))
        data_list = []
        for t, c, b, prop in items[:n_slides]:
            x = protos[torch.as_tensor(t)] + noise * torch.as_tensor(rng.normal(size=(n, dim)), dtype=torch.float32)
            if label == "infiltration":
                y = torch.tensor([float(b > 0)])
            elif label == "control":
                y = torch.tensor([float(prop[NECROSIS] > prop[NORMAL])])
            elif label == "expression":
                y = torch.tensor([b / B_SCALE + 0.5 * rng.normal()], dtype=torch.float32)
            else:
                hazard = 0.1 * np.exp(b / B_SCALE)
                time, cens = rng.exponential(1 / hazard), rng.exponential(1 / 0.05)
                y = torch.tensor([[min(time, cens), float(time <= cens)]], dtype=torch.float32)
            data_list.append(Data(x=x, edge_index=ei, pos=torch.as_tensor(coords), y=y,
                                  tissue=torch.as_tensor(t, dtype=torch.long), contact=torch.tensor([c]),
                                  proportions=torch.as_tensor(prop, dtype=torch.float32).unsqueeze(0)))
        self.data, self.slices = self.collate(data_list)

    @property
    def concepts(self) -> torch.Tensor:
        return prototypes(self.num_features)


# real bags ------------------------------------------------------------------------------------

def make_bag(features, coords, y=None, *, k: int = 8, name: str = "") -> Data:
    """A PyG ``Data`` bag from ``features`` (N, d) and ``coords`` (N, 2), with clear errors on bad input."""
    x = torch.as_tensor(np.asarray(features), dtype=torch.float32)
    if x.ndim != 2:
        raise ValueError(f"features must have shape (N, d), got {tuple(x.shape)}")
    if x.shape[0] < 2:
        raise ValueError(f"a bag needs at least 2 patches, got {x.shape[0]}")
    if not torch.isfinite(x).all():
        raise ValueError(f"features contain NaN or inf ({int((~torch.isfinite(x)).any(1).sum())} patches)")
    c = check_coords(coords, n_features=x.shape[0])
    d = Data(x=x, edge_index=patch_graph(c, k=k), pos=torch.as_tensor(c, dtype=torch.float32))
    if y is not None:
        d.y = y
    d.name = name
    return d


def _read_bag(path: Path) -> tuple[np.ndarray, np.ndarray]:
    suf = path.suffix.lower()
    if suf in (".h5", ".hdf5"):
        import h5py

        with h5py.File(path, "r") as f:
            return np.asarray(f["features"]).squeeze(), np.asarray(f["coords"]).squeeze()
    if suf == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return z["features"], z["coords"]
    if suf == ".pt":
        obj = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(obj, dict):
            return np.asarray(obj["features"]), np.asarray(obj["coords"])
        if isinstance(obj, (tuple, list)) and len(obj) == 2:
            return np.asarray(obj[0]), np.asarray(obj[1])
        raise ValueError("a .pt bag must hold {'features', 'coords'} or (features, coords)")
    raise ValueError(f"unknown bag format {suf!r}")


def read_labels(path) -> tuple[dict, list]:
    """Labels CSV: ``slide_id`` and ``label`` (classes), ``target`` (regression) or ``time`` + ``event``.

    Returns ``({slide_id: y}, skipped)`` with ``skipped`` the (line, reason) of bad rows.
    """
    out, skipped = {}, []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        cols = set(reader.fieldnames or ())
        if "slide_id" not in cols or not (cols & {"label", "target"} or {"time", "event"} <= cols):
            raise ValueError(f"{path}: needs slide_id and label, target or time+event columns, got {sorted(cols)}")
        for line, row in enumerate(reader, start=2):
            try:
                if {"time", "event"} <= cols:
                    t, e = float(row["time"]), float(row["event"])
                    if not (np.isfinite(t) and t > 0 and e in (0.0, 1.0)):
                        raise ValueError("time must be > 0 and event 0 or 1")
                    y = torch.tensor([[t, e]])
                else:
                    v = float(row["label" if "label" in cols else "target"])
                    if not np.isfinite(v):
                        raise ValueError("not finite")
                    y = torch.tensor([v])
                out[row["slide_id"]] = y
            except (ValueError, TypeError, KeyError) as err:
                skipped.append((line, str(err)))
    if skipped:
        log.warning("%s: skipped %d bad label rows (lines %s)", path, len(skipped), [s[0] for s in skipped])
    return out, skipped


class Bags(list):
    """A list of ``Data`` bags with ``skipped``: (file or line, reason) for what could not be read."""

    skipped: list


def load_bags(path, labels=None, *, k: int = 8) -> Bags:
    """Read bags ``(features[N, d], coords[N, 2])`` from a file or a folder of CLAM/TRIDENT ``.h5``,
    ``.pt`` or ``.npz`` files; ``labels``: a CSV (see :func:`read_labels`) matched on the file stem.
    Unreadable or invalid bag files are skipped and counted (``bags.skipped``), never fatal.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no bag file or folder at {p}")
    files = sorted(q for q in (p.iterdir() if p.is_dir() else [p])
                   if q.suffix.lower() in (".h5", ".hdf5", ".pt", ".npz"))
    y_of, bad_rows = read_labels(labels) if labels is not None else ({}, [])
    bags = Bags()
    bags.skipped = [(f"{labels}:{line}", why) for line, why in bad_rows]
    for f in files:
        if labels is not None and f.stem not in y_of:
            bags.skipped.append((str(f), "no label"))
            continue
        try:
            feats, coords = _read_bag(f)
            bags.append(make_bag(feats, coords, y_of.get(f.stem), k=k, name=f.stem))
        except Exception as err:  # noqa: BLE001 - any unreadable file is skipped and counted
            bags.skipped.append((str(f), f"{type(err).__name__}: {err}"))
    if bags.skipped:
        log.warning("load_bags: skipped %d of %d", len(bags.skipped), len(files))
    return bags
