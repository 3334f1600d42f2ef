"""Induced-update amplification: how much more an update moves the layer output than its size suggests.

The abstract states that "even if an update is well normalized as a matrix, its effect on the layer
output can be amplified when applied to graph-propagated features". We measure it (our definition;
the paper's exact normalisation is not known) as

.. math::  a(X, \\Delta W) = \\frac{\\|X\\,\\Delta W^\\top\\|_{op}}{\\|\\Delta W\\|_{op}\\;\\|X\\|_F/\\sqrt{d_{in}}}

the worst-direction gain of the update on the propagated input ``X`` (``n × d_in``), relative to the
gain on an isotropic input of the same energy (for which ``a = 1`` whenever ``ΔW`` has orthogonal rows
or columns). A Muon update (all singular values equal) gets ``a ≈ √(λ_max(Σ)/mean λ(Σ))``, which grows
as propagation makes ``Σ = XᵀX/n`` anisotropic; GraphMuon's update is whitened by Σ and stays ``≲ 1``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def amplification(x: Tensor, update: Tensor) -> float:
    """``a(X, ΔW)`` above, for ``x`` of shape ``(n, d_in)`` and ``update`` of shape ``(d_out, d_in)``."""
    if not isinstance(x, Tensor) or not isinstance(update, Tensor):
        raise TypeError("x and update must be torch.Tensors")
    if x.ndim != 2 or update.ndim != 2 or x.size(1) != update.size(1):
        raise ValueError(f"x must be (n, d_in) and update (d_out, d_in); got {tuple(x.shape)} and {tuple(update.shape)}")
    x, update = x.double(), update.double()
    du = torch.linalg.matrix_norm(update, ord=2)
    xf = torch.linalg.matrix_norm(x) / math.sqrt(x.size(1))
    if du == 0 or xf == 0:
        return float("nan")
    gram = update @ (x.T @ x) @ update.T  # ‖X ΔWᵀ‖_op² = λ_max(ΔW XᵀX ΔWᵀ), d_out × d_out
    induced = torch.linalg.eigvalsh(0.5 * (gram + gram.T))[-1].clamp(min=0).sqrt()
    return float(induced / (du * xf))


def identity_metric_gap(steps: int = 3, d_in: int = 16, d_out: int = 8, lr: float = 0.02, seed: int = 0) -> float:
    """Max |W_GraphMuon − W_Muon| after ``steps`` identical steps when Σ = I exactly.

    The input ``X = 4·I_16`` has ``XᵀX/n = I`` in floating point; GraphMuon runs with ``eps=0`` and
    Muon's ``match_rms_adamw`` scale; ``torch.optim.Muon`` gets the same gradients. 0 means Muon is
    recovered exactly.
    """
    from torch import nn

    from graphmuon.optimizer import GraphMuon

    if d_in != 16:
        raise ValueError("d_in must be 16 (X = 4·I_16 has an exactly representable identity covariance)")
    gen = torch.Generator().manual_seed(seed)
    target = torch.randn(d_in, d_out, generator=gen)
    a, b = nn.Linear(d_in, d_out, bias=False), nn.Linear(d_in, d_out, bias=False)
    with torch.no_grad():
        a.weight.copy_(torch.randn(d_out, d_in, generator=gen))
        b.weight.copy_(a.weight)
    gm = GraphMuon(a.parameters(), lr=lr, eps=0.0, scale="match_rms_adamw", weight_decay=0.1)
    gm.register(a.weight, a, name="weight")
    mu = torch.optim.Muon(b.parameters(), lr=lr, weight_decay=0.1, adjust_lr_fn="match_rms_adamw")
    x = 4.0 * torch.eye(d_in)
    for _ in range(steps):
        for lin, opt in ((a, gm), (b, mu)):
            opt.zero_grad()
            ((lin(x) - target) ** 2).sum().backward()
            opt.step()
    return float((a.weight - b.weight).detach().abs().max())
