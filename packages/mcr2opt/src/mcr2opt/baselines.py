"""Baselines: autograd through PyPI ``mcr2``'s ``DeltaR`` and through a plain ``torch.logdet`` formula.

Both compute the same F (λ = 0 for ``mcr2``, which has no regulariser) and its gradient by
reverse-mode autograd; :func:`mcr2opt.value_and_grad` is the closed form. Cross-entropy training,
the Exp B baseline, is :func:`mcr2opt.network.train` with ``loss="ce"``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mcr2opt.objective import class_index


def one_hot(y, n: int, dtype=torch.float32) -> Tensor:
    """(n, K) one-hot labels as ``mcr2`` takes them."""
    idx = class_index(y, n)
    out = torch.zeros(n, len(idx), dtype=dtype)
    for k, ix in enumerate(idx):
        out[ix, k] = 1
    return out


def mcr2_value_and_grad(Z: Tensor, y_onehot: Tensor, *, eps: float = 0.5) -> tuple[Tensor, Tensor]:
    """ΔR and its gradient by autograd through ``mcr2.primitives.coding_rate.DeltaR`` (eigvalsh), in float32.

    ``mcr2`` works in float32: it casts the labels with ``.float()``, and its einsum of float64
    features with float32 labels fails unless ``opt_einsum`` happens to be installed.
    """
    from mcr2.primitives.coding_rate import DeltaR

    Zr = Z.detach().float().requires_grad_(True)
    F = DeltaR(Zr, y_onehot.float(), eps)
    (g,) = torch.autograd.grad(F, Zr)
    return F.detach(), g


def logdet_value_and_grad(Z: Tensor, y, *, eps: float = 0.5, lam: float = 0.0) -> tuple[Tensor, Tensor]:
    """F and its gradient by autograd through ``torch.logdet`` of the d × d forms (the textbook formula)."""
    idx = class_index(y, Z.shape[0])
    Zr = Z.detach().requires_grad_(True)
    n, d = Zr.shape
    eye = torch.eye(d, dtype=Z.dtype)
    F = 0.5 * torch.logdet(eye + d / (n * eps**2) * Zr.T @ Zr) - 0.5 * lam * (Zr * Zr).sum()
    for ix in idx:
        Zk = Zr[ix]
        nk = len(ix)
        F = F - 0.5 * (nk / n) * torch.logdet(eye + d / (nk * eps**2) * Zk.T @ Zk)
    (g,) = torch.autograd.grad(F, Zr)
    return F.detach(), g
