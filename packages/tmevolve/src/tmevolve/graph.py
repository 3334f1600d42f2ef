"""Patch graphs from patch coordinates."""

from __future__ import annotations

import numpy as np
import torch
from scipy.spatial import cKDTree


def check_coords(coords, n_features: int | None = None) -> np.ndarray:
    """Validate patch coordinates: finite, shape (N, 2), no duplicates, N matching the features."""
    if isinstance(coords, torch.Tensor):
        coords = coords.detach().cpu().numpy()
    c = np.asarray(coords)
    if c.dtype.kind not in "iuf":
        raise TypeError(f"coords must be numeric, got dtype {c.dtype}")
    if c.ndim != 2 or c.shape[1] != 2:
        raise ValueError(f"coords must have shape (N, 2), got {c.shape}")
    if n_features is not None and c.shape[0] != n_features:
        raise ValueError(f"coords has {c.shape[0]} rows but the features have {n_features}")
    if c.shape[0] < 2:
        raise ValueError(f"a bag needs at least 2 patches, got {c.shape[0]}")
    c = c.astype(np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError("coords must be finite (found NaN or inf)")
    uniq = np.unique(c, axis=0)
    if uniq.shape[0] != c.shape[0]:
        raise ValueError(f"coords has {c.shape[0] - uniq.shape[0]} duplicate patch coordinates")
    return c


def patch_graph(coords, *, k: int = 8) -> torch.Tensor:
    """The k-neighbour patch graph (k = 8: king moves; k = 4: rook moves) of patch coordinates.

    The patch step is the smallest distance between two patches (any patch size and offset; holes are
    allowed); each patch is linked to the patches within one step along each axis (k = 8) or along
    one axis (k = 4), found with ``scipy.spatial.cKDTree``.

    Args:
        coords: (N, 2) patch coordinates (pixels or grid units), N >= 2, no duplicates.
        k: 8 or 4.

    Returns:
        ``edge_index`` (2, E) long tensor, both directions, sorted by target then source.

    Example:
        >>> patch_graph([[0, 0], [256, 0], [0, 256], [256, 256]]).shape
        torch.Size([2, 12])
    """
    if k not in (4, 8):
        raise ValueError(f"k must be 4 or 8, got {k!r}")
    c = check_coords(coords)
    tree = cKDTree(c)
    d, _ = tree.query(c, k=2)
    step = float(d[:, 1].min())
    radius = step * (np.sqrt(2.0) if k == 8 else 1.0) * (1 + 1e-6)
    pairs = tree.query_pairs(radius, output_type="ndarray")
    if k == 8 and len(pairs):  # a king move is at most one step along each axis
        delta = np.abs(c[pairs[:, 0]] - c[pairs[:, 1]])
        pairs = pairs[np.all(delta <= step * (1 + 1e-6), axis=1)]
    both = np.concatenate([pairs, pairs[:, ::-1]], axis=0) if len(pairs) else np.zeros((0, 2), np.int64)
    order = np.lexsort((both[:, 0], both[:, 1]))
    return torch.as_tensor(both[order].T.copy(), dtype=torch.long)
