"""Distribution-aware source→target alignment: RBF-MMD or optimal transport (POT).

Inferred from the abstract ("we align the target domain with the source domain in a distribution-aware
manner"): the target's subgraph embeddings are mapped by a learnable affine adapter so that their
distribution matches the weighted source prototypes.
"""

from __future__ import annotations

import numpy as np
import torch


def _weights(w, n: int, like: torch.Tensor) -> torch.Tensor:
    if w is None:
        return torch.full((n,), 1.0 / n, dtype=like.dtype, device=like.device)
    w = torch.as_tensor(w, dtype=like.dtype, device=like.device)
    if w.shape != (n,) or not torch.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be {n} finite non-negative numbers with a positive sum")
    return w / w.sum()


def median_bandwidth(x: torch.Tensor, y: torch.Tensor) -> float:
    """The median heuristic: ``sigma^2`` = median squared distance between the pooled points / 2."""
    z = torch.cat([x, y]).detach()
    d2 = torch.cdist(z, z).pow(2)
    med = d2[d2 > 0].median() if (d2 > 0).any() else torch.tensor(1.0)
    return float(med / 2)


def rbf_mmd2(x: torch.Tensor, y: torch.Tensor, *, weights_x=None, weights_y=None, sigma2: float | None = None) -> torch.Tensor:
    r"""Squared MMD (V-statistic) between weighted samples with an RBF kernel.

    .. math:: \mathrm{MMD}^2 = a^\top K_{xx} a + b^\top K_{yy} b - 2 a^\top K_{xy} b,
              \quad k(u, v) = \exp(-\lVert u - v\rVert^2 / (2\sigma^2))

    Args:
        x: ``[n, d]``; y: ``[m, d]``; weights: ``a`` (n) and ``b`` (m), uniform by default.
        sigma2: ``sigma^2``; default the median heuristic (:func:`median_bandwidth`).
    """
    a, b = _weights(weights_x, x.size(0), x), _weights(weights_y, y.size(0), x)
    s2 = median_bandwidth(x, y) if sigma2 is None else float(sigma2)

    def k(u, v):
        return torch.exp(-torch.cdist(u, v).pow(2) / (2 * s2))

    return a @ k(x, x) @ a + b @ k(y, y) @ b - 2 * a @ k(x, y) @ b


def ot_cost(x: torch.Tensor, y: torch.Tensor, *, weights_x=None, weights_y=None) -> torch.Tensor:
    r"""Exact optimal-transport cost :math:`\min_{T \in \Pi(a, b)} \langle T, M \rangle`, ``M`` squared distances.

    The plan comes from ``ot.emd`` on the detached costs; the returned ``<T, M>`` is differentiable in
    ``x`` and ``y`` (the envelope theorem: the optimal plan's gradient term vanishes).
    """
    import ot  # imported here: POT's import pulls in every installed backend (jax, tensorflow), seconds

    a, b = _weights(weights_x, x.size(0), x), _weights(weights_y, y.size(0), x)
    m = torch.cdist(x, y).pow(2)
    plan = ot.emd(a.detach().double().cpu().numpy(), b.detach().double().cpu().numpy(),
                  m.detach().double().cpu().numpy())
    return (torch.as_tensor(np.asarray(plan), dtype=m.dtype, device=m.device) * m).sum()


def alignment_loss(kind: str, x: torch.Tensor, y: torch.Tensor, weights_y=None, sigma2: float | None = None) -> torch.Tensor:
    """``rbf_mmd2`` (``kind="mmd"``, bandwidth ``sigma2``) or ``ot_cost`` (``kind="ot"``) of target ``x`` to source ``y``."""
    if kind == "mmd":
        return rbf_mmd2(x, y, weights_y=weights_y, sigma2=sigma2)
    if kind == "ot":
        return ot_cost(x, y, weights_y=weights_y)
    raise ValueError(f"align must be 'mmd', 'ot' or None, got {kind!r}")
