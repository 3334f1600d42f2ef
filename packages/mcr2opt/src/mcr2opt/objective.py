"""The supervised MCR² objective, its analytic gradient, and a loss module.

Signs and scalings (rows are samples; the papers write Z as d × n)::

    F(Z) = ½ logdet(I + α ZᵀZ) − Σ_k (n_k / 2n) logdet(I + α_k Z_kᵀZ_k) − (λ/2) ‖Z‖²_F,
    α = d / (n ε²),  α_k = d / (n_k ε²),

for features Z of shape ``(n, d)`` and Z_k the rows of class k. F = ΔR − (λ/2)‖Z‖²_F is the
coding-rate *reduction*; it is **maximised**, so the training loss is −F (ryanchankh/mcr2 #6).
These α, α_k are the scalings of PyPI ``mcr2`` (``DeltaR``: logdet(I + d/ε² · Z_kᵀZ_k/n_k)), so
``mcr2(Z, y, lam=0)`` equals ``mcr2.primitives.coding_rate.DeltaR`` (tested). The regularised
form (λ > 0) is Wang et al. (ICML 2024); the sphere-constrained form is the original MCR² (Yu et
al., NeurIPS 2020) with every row on the unit sphere (``normalize=True`` or
``ascend(method="pgd_sphere")``).

Gradient (Sylvester: Z(I + αZᵀZ)⁻¹ = (I + αZZᵀ)⁻¹Z, and n_k α_k / n = α)::

    ∇_{Z_k} F = α Z_k [(I + αZᵀZ)⁻¹ − (I + α_k Z_kᵀZ_k)⁻¹] − λ Z_k .

Each log-determinant and solve uses a Cholesky factor of the smaller of the d × d and
n_k × n_k Gram forms (the same by Sylvester's identity). A float32 Cholesky that fails (huge,
unnormalised features; ryanchankh/mcr2 #10) is redone in float64, so no NaN comes back.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from paperworks.utils import check_float


def _check_Z(Z) -> Tensor:
    if not isinstance(Z, Tensor):
        raise TypeError(f"Z must be a torch.Tensor of shape (n, d), got {type(Z).__name__}")
    if Z.ndim != 2 or Z.shape[0] < 1 or Z.shape[1] < 1:
        raise ValueError(f"Z must have shape (n, d) with n, d >= 1, got {tuple(Z.shape)}")
    if not Z.is_floating_point():
        raise TypeError(f"Z must be a floating-point tensor, got {Z.dtype}")
    if not bool(torch.isfinite(Z.sum())) and not bool(torch.isfinite(Z).all()):   # the sum first: cheap
        raise ValueError("Z must be finite (found NaN or inf)")
    return Z


def class_index(y, n: int, device=None) -> list[Tensor]:
    """Row indices of each class from labels ``y``: 1-D integer labels, or an (n, K) one-hot matrix.

    Classes are the distinct labels in increasing order (one-hot: the columns). A one-hot column
    without a sample is an empty class and an error.
    """
    if not isinstance(y, Tensor):
        try:
            y = torch.as_tensor(y)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"y must be integer labels (n,) or one-hot (n, K), got {type(y).__name__}") from None
    if y.ndim == 2:
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} rows but Z has {n}")
        counts = (y != 0).sum(0)
        empty = torch.nonzero(counts == 0).flatten().tolist()
        if empty:
            raise ValueError(f"y: class {empty[0]} is empty (no sample in its one-hot column)")
        if bool(((y != 0).sum(1) != 1).any()):
            raise ValueError("y: each one-hot row must have exactly one nonzero entry")
        lab = torch.argmax((y != 0).to(torch.int8), dim=1)
        K = y.shape[1]
    elif y.ndim == 1:
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels but Z has {n} rows")
        if y.is_floating_point() or y.dtype == torch.bool:
            raise TypeError(f"y must hold integer labels, got {y.dtype}")
        uniq = torch.unique(y)
        lab = torch.searchsorted(uniq, y)
        K = len(uniq)
    else:
        raise ValueError(f"y must be 1-D labels or a 2-D one-hot matrix, got shape {tuple(y.shape)}")
    lab = lab.to(device) if device is not None else lab
    return [torch.nonzero(lab == k).flatten() for k in range(K)]


def _chol(M: Tensor) -> Tensor:
    L, info = torch.linalg.cholesky_ex(M)
    if bool(info.any()):
        raise torch.linalg.LinAlgError("Cholesky failed")
    return L


def _logdet_and_solve(Zk: Tensor, a: float, *, need_grad: bool) -> tuple[Tensor, Tensor | None]:
    """logdet(I + a ZᵀZ) and a Z(I + a ZᵀZ)⁻¹ through the smaller Gram form; Zk may be batched (..., m, d)."""
    m, d = Zk.shape[-2:]
    small_side = m < d
    Zt = Zk.transpose(-1, -2)
    G = Zk @ Zt.contiguous() if small_side else Zt @ Zk   # a contiguous copy makes the batched product ~4× faster
    M = a * G
    M.diagonal(dim1=-2, dim2=-1).add_(1.0)
    L = _chol(M)
    ld = 2.0 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
    if not need_grad:
        return ld, None
    if small_side:   # a (I + a ZZᵀ)⁻¹ Z
        g = a * torch.cholesky_solve(Zk, L)
    else:            # a Z (I + a ZᵀZ)⁻¹ (M ⪰ I is well conditioned: the explicit inverse is safe and faster)
        g = a * (Zk @ torch.cholesky_inverse(L))
    return ld, g


def _value_grad(Z: Tensor, idx: list[Tensor], eps: float, lam: float, need_grad: bool):
    n, d = Z.shape
    alpha = d / (n * eps**2)
    ld, g = _logdet_and_solve(Z, alpha, need_grad=need_grad)
    F = 0.5 * ld - 0.5 * lam * (Z * Z).sum()
    grad = (g - lam * Z) if need_grad else None
    sizes = [len(ix) for ix in idx]
    if len(set(sizes)) == 1:   # equal classes: one batched Cholesky for all of them
        nk = sizes[0]
        perm = torch.cat(idx)
        Zb = Z[perm].reshape(len(idx), nk, d)
        ldk, gk = _logdet_and_solve(Zb, d / (nk * eps**2), need_grad=need_grad)
        F = F - 0.5 * (nk / n) * ldk.sum()
        if need_grad:
            grad.index_add_(0, perm, gk.reshape(n, d), alpha=-(nk / n))
        return F, grad
    for ix in idx:
        nk = len(ix)
        ldk, gk = _logdet_and_solve(Z[ix], d / (nk * eps**2), need_grad=need_grad)
        F = F - 0.5 * (nk / n) * ldk
        if need_grad:   # (n_k/n) α_k Z_k(I + α_k Z_kᵀZ_k)⁻¹
            grad.index_add_(0, ix, gk, alpha=-(nk / n))
    return F, grad


def _evaluate(Z, y, eps, lam, need_grad, normalize):
    Z = _check_Z(Z)
    eps = check_float(eps, "eps", minimum=0.0, open_minimum=True)
    lam = check_float(lam, "lam", minimum=0.0)
    idx = class_index(y, Z.shape[0], Z.device)
    Z = Z.detach()
    X = Z
    if normalize:
        norms = Z.norm(dim=1, keepdim=True)
        if bool((norms == 0).any()):
            raise ValueError("Z: a zero row cannot be normalised (normalize=True)")
        X = Z / norms
    try:
        F, g = _value_grad(X, idx, eps, lam, need_grad)
    except torch.linalg.LinAlgError:
        F, g = _value_grad(X.double(), idx, eps, lam, need_grad)   # huge unnormalised features
        F, g = F.to(Z.dtype), (g.to(Z.dtype) if g is not None else None)
    if need_grad and normalize:   # chain rule through z / ‖z‖: (I − x xᵀ) g / ‖z‖
        g = (g - (g * X).sum(1, keepdim=True) * X) / norms
    return F, g


def mcr2(Z: Tensor, y, *, eps: float = 0.5, lam: float = 0.0, normalize: bool = False) -> Tensor:
    """The (regularised) MCR² objective F(Z) = ΔR(Z) − (λ/2)‖Z‖²_F, to be maximised.

    Args:
        Z: features, shape ``(n, d)`` (rows are samples), float32 or float64.
        y: integer labels ``(n,)`` or one-hot ``(n, K)``.
        eps: distortion ε > 0 (α = d/(nε²), α_k = d/(n_kε²), as PyPI ``mcr2``).
        lam: λ ≥ 0, the weight of −(λ/2)‖Z‖²_F (Wang et al. 2024); 0 gives plain ΔR.
        normalize: put every row on the unit sphere first (the original MCR²).

    Returns:
        A 0-d tensor (no autograd graph; use :func:`value_and_grad` or :class:`MCR2Loss`).

    Example:
        >>> Z, y = torch.randn(40, 8, dtype=torch.float64), torch.arange(40) % 4
        >>> float(mcr2(Z, y, eps=0.5)) > 0
        True
    """
    return _evaluate(Z, y, eps, lam, False, normalize)[0]


def value_and_grad(Z: Tensor, y, *, eps: float = 0.5, lam: float = 0.0,
                   normalize: bool = False) -> tuple[Tensor, Tensor]:
    """F(Z) and its analytic gradient ∇F(Z) (same shape and dtype as ``Z``); see the module doc."""
    return _evaluate(Z, y, eps, lam, True, normalize)


class _NegMCR2(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Z, y, eps, lam, normalize):
        F, g = value_and_grad(Z, y, eps=eps, lam=lam, normalize=normalize)
        ctx.save_for_backward(g)
        return -F

    @staticmethod
    def backward(ctx, out):
        (g,) = ctx.saved_tensors
        return -out * g, None, None, None, None


class MCR2Loss(nn.Module):
    """The training loss −F(Z) with the analytic gradient (one Cholesky per class, no eigen-solver).

    ``loss = MCR2Loss(eps=0.5, lam=0.0)(Z, y)``; minimising it maximises the rate reduction, so
    the loss is negative for useful features (ryanchankh/mcr2 #6). ``normalize=True`` puts rows on
    the unit sphere inside the loss. Second derivatives are not supported (the backward pass is
    the closed-form gradient).
    """

    def __init__(self, eps: float = 0.5, lam: float = 0.0, *, normalize: bool = False):
        super().__init__()
        self.eps = check_float(eps, "eps", minimum=0.0, open_minimum=True)
        self.lam = check_float(lam, "lam", minimum=0.0)
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
        self.normalize = normalize

    def forward(self, Z: Tensor, y) -> Tensor:
        return _NegMCR2.apply(Z, y, self.eps, self.lam, self.normalize)

    def extra_repr(self) -> str:
        return f"eps={self.eps}, lam={self.lam}, normalize={self.normalize}"
