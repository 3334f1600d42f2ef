"""Sparse products with per-edge scalar weights (no per-edge feature tensor is kept for backward)."""

from __future__ import annotations

import torch

_CHUNK = 1 << 17


def _spmm(rows: torch.Tensor, cols: torch.Tensor, values: torch.Tensor, shape, h: torch.Tensor) -> torch.Tensor:
    a = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, shape, check_invariants=False)
    return torch.sparse.mm(a.coalesce(), h)


class _WeightedAggregate(torch.autograd.Function):
    # y[k*N + dst] += w[:, k] * h[src] for m weight columns k, as one sparse (mN x N) product
    @staticmethod
    def forward(ctx, edge_index, weight, h, n):
        src, dst = edge_index
        m = weight.shape[1]
        rows = (dst.unsqueeze(1) + n * torch.arange(m, device=dst.device)).T.reshape(-1)
        cols = src.repeat(m)
        ctx.save_for_backward(edge_index, weight, h, rows, cols)
        ctx.n = n
        return _spmm(rows, cols, weight.detach().T.reshape(-1), (m * n, h.shape[0]), h.detach()).view(m, n, -1)

    @staticmethod
    def backward(ctx, grad_y):
        edge_index, weight, h, rows, cols = ctx.saved_tensors
        src, dst = edge_index
        n, m = ctx.n, weight.shape[1]
        grad_w = grad_h = None
        if ctx.needs_input_grad[1]:
            # dL/dw_ek = <grad_y[k, dst_e], h[src_e]>, chunked so no E x d tensor lives long
            grad_w = torch.empty_like(weight)
            for s in range(0, src.numel(), _CHUNK):
                e = slice(s, s + _CHUNK)
                hs = h[src[e]]
                for k in range(m):
                    grad_w[e, k] = (grad_y[k][dst[e]] * hs).sum(-1)
        if ctx.needs_input_grad[2]:
            grad_h = _spmm(cols, rows, weight.detach().T.reshape(-1), (h.shape[0], m * n),
                           grad_y.reshape(m * n, -1))
        return None, grad_w, grad_h, None


def weighted_aggregate(edge_index: torch.Tensor, weight: torch.Tensor, h: torch.Tensor,
                       num_nodes: int | None = None) -> torch.Tensor:
    """``y_i = Σ_{(j→i)} w_ji h_j`` for ``edge_index = [src; dst]`` (PyG's source-to-target flow).

    ``weight`` (E,) gives (N, d); (E, m) gives (m, N, d) from one sparse product. Differentiable in
    ``weight`` and ``h``; memory O(m·E + m·N·d).
    """
    n = h.shape[0] if num_nodes is None else int(num_nodes)
    if weight.ndim == 1:
        return _WeightedAggregate.apply(edge_index, weight.unsqueeze(1), h, n)[0]
    return _WeightedAggregate.apply(edge_index, weight, h, n)


def graph_laplacian_apply(edge_index: torch.Tensor, weight: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """``Σ_j w_ji (h_j − h_i)`` at every node i; ``weight`` (E,) → (N, d), (E, m) → (m, N, d)."""
    w = weight if weight.ndim == 2 else weight.unsqueeze(1)
    deg = torch.zeros(h.shape[0], w.shape[1], dtype=h.dtype, device=h.device).index_add(0, edge_index[1], w)
    out = weighted_aggregate(edge_index, w, h) - deg.T.unsqueeze(-1) * h
    return out if weight.ndim == 2 else out[0]
