"""Representation geometry: per-class effective rank and principal angles between class subspaces."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from mcr2opt.objective import _check_Z, class_index
from paperworks.utils import check_float, check_int


def effective_rank(X: Tensor) -> float:
    """exp(entropy of the normalised singular values) (Roy & Vetterli 2007); 0 for a zero matrix."""
    s = torch.linalg.svdvals(X.double())
    if float(s.sum()) == 0:
        return 0.0
    p = s / s.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def subspace_geometry(Z: Tensor, y, *, rank: int | None = None, energy: float = 0.9) -> dict:
    """The class subspaces of features Z (rows) and how they sit against each other.

    Each class's subspace is spanned by the top right singular vectors of its (uncentred) rows:
    ``rank`` of them, or (``rank=None``) as many as hold ``energy`` of the class's squared
    singular values. Principal-angle cosines between classes k and l are the singular values of
    U_kᵀU_l (1: shared direction, 0: orthogonal).

    Returns:
        ``{"effective_rank": [per class], "rank": [per class], "cosines": K×K array of the mean
        principal-angle cosine (diagonal 1), "max_cosines": K×K of the largest one,
        "mean_cosine": mean off-diagonal mean cosine, "mean_max_cosine": the same for the largest}``.

    Example:
        >>> Z, y = torch.eye(4, dtype=torch.float64), torch.tensor([0, 0, 1, 1])
        >>> subspace_geometry(Z, y)["mean_cosine"]
        0.0
    """
    Z = _check_Z(Z).detach().double()
    rank = check_int(rank, "rank", optional=True)
    energy = check_float(energy, "energy", minimum=0.0, maximum=1.0, open_minimum=True)
    idx = class_index(y, Z.shape[0], Z.device)
    bases, ranks, eff = [], [], []
    for ix in idx:
        _, s, Vh = torch.linalg.svd(Z[ix], full_matrices=False)
        if rank is None:
            c = torch.cumsum(s**2, 0) / max(float((s**2).sum()), 1e-300)
            r = int(torch.searchsorted(c, torch.tensor(energy, dtype=c.dtype) - 1e-12)) + 1
        else:
            r = rank
        r = max(1, min(r, len(s)))
        bases.append(Vh[:r].T)
        ranks.append(r)
        eff.append(effective_rank(Z[ix]))
    K = len(idx)
    cos, mx = np.eye(K), np.eye(K)
    for k in range(K):
        for j in range(k + 1, K):
            sv = torch.linalg.svdvals(bases[k].T @ bases[j]).clamp(max=1.0)
            cos[k, j] = cos[j, k] = float(sv.mean())
            mx[k, j] = mx[j, k] = float(sv.max())
    off = ~np.eye(K, dtype=bool)
    return {"effective_rank": eff, "rank": ranks, "cosines": cos, "max_cosines": mx,
            "mean_cosine": float(cos[off].mean()) if K > 1 else math.nan,
            "mean_max_cosine": float(mx[off].mean()) if K > 1 else math.nan}
