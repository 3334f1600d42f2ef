"""Laplacians, positive polynomials and the SPD solve ``(p(L) + Q) y = Q x`` with autograd.

Two solve paths share one operator ``A = p(L) + diag(q)``:

- dense: the graphs of a PyG batch are padded into ``[B, n_max, n_max]`` blocks and solved with
  ``torch.linalg.solve`` (exact, autograd through LAPACK); for small graphs;
- CG: conjugate gradient on the sparse block-diagonal operator, differentiated implicitly
  (the backward pass solves ``A g = dL/dy`` with CG again and never stores the iterations);
  memory is O(nnz + N·C), no dense N×N matrix is ever formed. Runs on GPU where the tensors are.

Polynomials are carried as monomial coefficients ``c`` with ``p(L) = Σ_k c_k L^k``; the Bernstein
parameterisation that keeps ``p ≥ 0`` on ``[0, 2]`` lives in :mod:`tikhonovgnn.tikhonov`.
"""

from __future__ import annotations

import logging
import math
import warnings

import torch
from torch import Tensor
from torch_geometric.utils import get_laplacian, to_dense_adj

log = logging.getLogger(__name__)

__all__ = [
    "check_graph",
    "normalized_laplacian",
    "dense_laplacian",
    "poly_apply",
    "poly_dense",
    "solve_dense",
    "solve_cg",
    "cg",
]


# input validation ------------------------------------------------------------------------

def check_graph(x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None, batch: Tensor | None = None) -> int:
    """Validate a (possibly batched) graph; return the number of nodes.

    Raises a ``TypeError``/``ValueError`` naming the argument for: non-tensor input, an empty graph,
    non-finite features, a malformed or out-of-range ``edge_index``, negative or non-finite edge
    weights, a ``batch`` vector of the wrong length. Isolated nodes and disconnected graphs are fine.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"x must have shape [num_nodes, channels], got {tuple(x.shape)}")
    n = x.size(0)
    if n == 0:
        raise ValueError("x is an empty graph (0 nodes); the Tikhonov layer needs at least one node")
    if not torch.is_floating_point(x):
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError("x holds non-finite features (NaN or inf)")
    if not isinstance(edge_index, Tensor):
        raise TypeError(f"edge_index must be a torch.Tensor, got {type(edge_index).__name__}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, num_edges], got {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.long, torch.int32, torch.int64):
        raise TypeError(f"edge_index must be an integer tensor, got {edge_index.dtype}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"edge_index holds node indices outside [0, {n}) (min {int(edge_index.min())}, "
                         f"max {int(edge_index.max())})")
    if edge_weight is not None:
        if not isinstance(edge_weight, Tensor) or edge_weight.shape != (edge_index.size(1),):
            raise ValueError(f"edge_weight must be a tensor of shape [{edge_index.size(1)}]")
        if not torch.isfinite(edge_weight).all() or (edge_weight < 0).any():
            raise ValueError("edge_weight must be finite and non-negative (the Laplacian needs A >= 0)")
    if batch is not None:
        if not isinstance(batch, Tensor) or batch.shape != (n,):
            raise ValueError(f"batch must be a tensor of shape [{n}], got "
                             f"{tuple(batch.shape) if isinstance(batch, Tensor) else type(batch).__name__}")
        if n > 1 and (batch[1:] < batch[:-1]).any():
            raise ValueError("batch must be sorted (PyG's block-diagonal batching)")
    return n


# Laplacians ------------------------------------------------------------------------------

def normalized_laplacian(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None,
                         dtype: torch.dtype = torch.float32) -> Tensor:
    r"""Sparse CSR normalised Laplacian :math:`L = I - D^{-1/2} A D^{-1/2}` (spectrum in ``[0, 2]``).

    Self-loops are dropped; isolated nodes get ``L_ii = 1``. ``A`` is symmetrised by the caller
    (PyG graphs list both directions).
    """
    ei, w = get_laplacian(edge_index, edge_weight.to(dtype) if edge_weight is not None else None,
                          normalization="sym", dtype=dtype, num_nodes=num_nodes)
    L = torch.sparse_coo_tensor(ei, w, (num_nodes, num_nodes), check_invariants=False).coalesce()
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        return L.to_sparse_csr()


def dense_laplacian(edge_index: Tensor, num_nodes: int, batch: Tensor | None = None,
                    edge_weight: Tensor | None = None, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """Batched dense Laplacians ``[B, n_max, n_max]`` and the node mask ``[B, n_max]``.

    Padding rows get ``L = I`` (like isolated nodes), so ``p(L) + Q`` stays block diagonal and
    invertible; the caller puts zeros on the right-hand side there.
    """
    if batch is None:
        batch = torch.zeros(num_nodes, dtype=torch.long, device=edge_index.device)
    ei, w = get_laplacian(edge_index, edge_weight.to(dtype) if edge_weight is not None else None,
                          normalization="sym", dtype=dtype, num_nodes=num_nodes)
    L = to_dense_adj(ei, batch, edge_attr=w)  # [B, n_max, n_max]
    counts = torch.bincount(batch)
    n_max = L.size(-1)
    mask = torch.arange(n_max, device=L.device)[None, :] < counts[:, None]
    pad = (~mask).to(L.dtype)
    L = L + torch.diag_embed(pad)
    return L, mask


# polynomials -----------------------------------------------------------------------------

def _matvec(L: Tensor, v: Tensor) -> Tensor:
    return torch.bmm(L, v) if L.dim() == 3 else L @ v


def poly_apply(L: Tensor, coeffs: Tensor, v: Tensor) -> Tensor:
    """``p(L) v`` by Horner's rule: ``K`` products with ``L`` (sparse or dense, batched or not)."""
    out = coeffs[-1] * v
    for c in coeffs.flip(0)[1:]:
        out = _matvec(L, out) + c * v
    return out


def poly_dense(L: Tensor, coeffs: Tensor) -> Tensor:
    """Dense ``p(L)`` for a dense (batched) ``L`` by Horner's rule."""
    eye = torch.eye(L.size(-1), dtype=L.dtype, device=L.device).expand_as(L)
    out = coeffs[-1] * eye
    for c in coeffs.flip(0)[1:]:
        out = L @ out + c * eye
    return out


# dense path ------------------------------------------------------------------------------

def solve_dense(L: Tensor, mask: Tensor, coeffs: Tensor, q: Tensor, b: Tensor) -> Tensor:
    """Solve ``(p(L) + diag(q)) y = b`` for padded batches.

    Args:
        L: ``[B, n, n]`` dense Laplacians (from :func:`dense_laplacian`).
        mask: ``[B, n]`` real-node mask.
        coeffs: ``[K+1]`` monomial coefficients of ``p``.
        q: ``[B, n]`` positive scores (padding entries are ignored).
        b: ``[B, n, C]`` right-hand sides.
    """
    qq = torch.where(mask, q, torch.ones_like(q))
    A = poly_dense(L, coeffs) + torch.diag_embed(qq)
    return torch.linalg.solve(A, b * mask[..., None])


# CG path ---------------------------------------------------------------------------------

def cg(matvec, b: Tensor, *, tol: float = 1e-6, maxiter: int = 1000, x0: Tensor | None = None) -> tuple[Tensor, int, float]:
    """Conjugate gradient for an SPD operator, column-wise on ``b`` of shape ``[N, C]``.

    Stops when every column has ``‖r‖ ≤ tol · ‖b‖``. Returns ``(y, iterations, max relative residual)``.
    """
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r = b - matvec(x) if x0 is not None else b.clone()
    p = r.clone()
    rs = (r * r).sum(0)
    bnorm = b.norm(dim=0).clamp_min(torch.finfo(b.dtype).tiny)
    it = 0
    rel = float((rs.sqrt() / bnorm).max()) if b.numel() else 0.0
    while it < maxiter and rel > tol:
        Ap = matvec(p)
        pAp = (p * Ap).sum(0)
        alpha = torch.where(pAp > 0, rs / pAp.clamp_min(torch.finfo(b.dtype).tiny), torch.zeros_like(rs))
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = (r * r).sum(0)
        beta = torch.where(rs > 0, rs_new / rs.clamp_min(torch.finfo(b.dtype).tiny), torch.zeros_like(rs))
        p = r + beta * p
        rs = rs_new
        it += 1
        rel = float((rs.sqrt() / bnorm).max())
    return x, it, rel


class _CGSolve(torch.autograd.Function):
    """``y = (p(L) + diag(q))^{-1} b`` with implicit differentiation.

    Backward: ``g = A^{-1} ∂ℓ/∂y`` (A is symmetric), then ``∂ℓ/∂b = g``,
    ``∂ℓ/∂q_i = -Σ_c g_ic y_ic`` and ``∂ℓ/∂c_k = -⟨g, L^k y⟩``.
    """

    @staticmethod
    def forward(ctx, b, q, coeffs, L, tol, maxiter):
        def matvec(v):
            return poly_apply(L, coeffs, v) + q[:, None] * v

        y, it, rel = cg(matvec, b, tol=tol, maxiter=maxiter)
        if rel > tol:
            log.warning("CG stopped after %d iterations at relative residual %.2e (tol %.1e)", it, rel, tol)
        ctx.save_for_backward(y, q, coeffs)
        ctx.L, ctx.tol, ctx.maxiter = L, tol, maxiter
        ctx.iterations = it
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, q, coeffs = ctx.saved_tensors
        L = ctx.L

        def matvec(v):
            return poly_apply(L, coeffs, v) + q[:, None] * v

        g, it, rel = cg(matvec, grad_y.contiguous(), tol=ctx.tol, maxiter=ctx.maxiter)
        if rel > ctx.tol:
            log.warning("CG (backward) stopped after %d iterations at relative residual %.2e", it, rel)
        grad_q = -(g * y).sum(1) if ctx.needs_input_grad[1] else None
        grad_c = None
        if ctx.needs_input_grad[2]:
            terms, v = [], y
            for k in range(coeffs.numel()):
                terms.append((g * v).sum())
                if k + 1 < coeffs.numel():
                    v = L @ v
            grad_c = -torch.stack(terms)
        return g, grad_q, grad_c, None, None, None


def solve_cg(L: Tensor, coeffs: Tensor, q: Tensor, b: Tensor, *, tol: float = 1e-6, maxiter: int = 1000) -> Tensor:
    """Solve ``(p(L) + diag(q)) y = b`` with CG; ``L`` sparse ``[N, N]``, ``q`` ``[N]``, ``b`` ``[N, C]``."""
    if tol <= 0 or not math.isfinite(tol):
        raise ValueError(f"tol must be a positive number, got {tol}")
    return _CGSolve.apply(b, q, coeffs, L, float(tol), int(maxiter))
