"""High-confidence subgraph prototypes and the DEC-style self-training objective.

Inferred from the abstract ("we select learnable high-confidence unified subgraph prototypes"): k-means
on the source subgraph embeddings; the units with the largest assignment margin are kept; the centroids
of the kept units become learnable prototypes, trained with the encoder under DEC's KL objective
(Xie et al., 2016).
"""

from __future__ import annotations

import math

import torch


def assignment_margin(z: torch.Tensor, centroids: torch.Tensor) -> torch.Tensor:
    """Confidence of each point's k-means assignment: second-nearest minus nearest squared distance."""
    d2 = torch.cdist(z, centroids).pow(2)
    two = d2.topk(2, dim=1, largest=False).values
    return two[:, 1] - two[:, 0]


def select_confident(margin: torch.Tensor, fraction: float) -> torch.Tensor:
    """Indices of the ``ceil(fraction * n)`` points with the largest margin (ties: lower index first)."""
    n = margin.numel()
    k = max(1, math.ceil(fraction * n))
    order = torch.sort(-margin, stable=True).indices
    return order[:k].sort().values


def soft_assign(z: torch.Tensor, centroids: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    r"""DEC's Student-t assignment :math:`q_{ij} \propto (1 + \lVert z_i - \mu_j\rVert^2/\alpha)^{-(\alpha+1)/2}`."""
    q = (1 + torch.cdist(z, centroids).pow(2) / alpha).pow(-(alpha + 1) / 2)
    return q / q.sum(1, keepdim=True)


def target_distribution(q: torch.Tensor) -> torch.Tensor:
    r"""DEC's sharpened target :math:`p_{ij} = (q_{ij}^2 / f_j) / \sum_{j'} q_{ij'}^2 / f_{j'}`, ``f_j = \sum_i q_{ij}``."""
    w = q.pow(2) / q.sum(0)
    return (w / w.sum(1, keepdim=True)).detach()


def dec_kl(q: torch.Tensor) -> torch.Tensor:
    """``KL(P || Q)`` averaged over points, ``P`` the (detached) target distribution of ``Q``."""
    p = target_distribution(q)
    return (p * (torch.log(p.clamp_min(1e-12)) - torch.log(q.clamp_min(1e-12)))).sum(1).mean()
