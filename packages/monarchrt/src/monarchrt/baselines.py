"""What MonarchRT is compared against, each with its FLOP count for matched-compute comparisons.

All functions take SDPA-shaped q, k, v (..., N, d) with tokens in (frames, height, width) order.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn.functional as F

from monarchrt.monarch import monarch_attention


def dense_attention(q, k, v, *, causal_mask=None):
    """Exact softmax attention (``F.scaled_dot_product_attention``); ``causal_mask`` (N, N) bool = allowed."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask)


def dense_map(q, k, *, causal_mask=None):
    """The exact attention map softmax(QKᵀ/√d) (small N only)."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal_mask is not None:
        s = s.masked_fill(~causal_mask, float("-inf"))
    return torch.softmax(s, -1)


def topk_map(q, k, topk: int, *, causal_mask=None):
    """Oracle top-k: the exact scores, only the ``topk`` largest per row kept, renormalised."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal_mask is not None:
        s = s.masked_fill(~causal_mask, float("-inf"))
    kth = s.topk(min(topk, s.shape[-1]), dim=-1).values[..., -1:]
    return torch.softmax(s.masked_fill(s < kth, float("-inf")), -1)


def topk_attention(q, k, v, topk: int, *, causal_mask=None):
    return topk_map(q, k, topk, causal_mask=causal_mask) @ v


def topk_flops(N: int, d: int, topk: int) -> float:
    """FLOPs of the kept entries only (the oracle's selection is free — it is an oracle)."""
    return float(2 * N * topk * d * 2)


def sliding_tile_mask(layout, tile, window) -> torch.Tensor:
    """(N, N) bool: query tile attends to the key tiles within ``window`` tiles (per axis, centred)."""
    Fr, H, W = layout
    tf, th, tw = tile
    f, h, w = torch.meshgrid(torch.arange(Fr), torch.arange(H), torch.arange(W), indexing="ij")
    t = torch.stack([f.reshape(-1) // tf, h.reshape(-1) // th, w.reshape(-1) // tw], -1)
    ok = torch.ones(t.shape[0], t.shape[0], dtype=torch.bool)
    for ax in range(3):
        ok &= (t[:, None, ax] - t[None, :, ax]).abs() <= window[ax] // 2
    return ok


def _axis_keys(n_tiles: int, tile: int, window: int) -> float:
    """Mean number of keys along one axis seen by a query (window clipped at the borders)."""
    t = torch.arange(n_tiles)
    lo, hi = (t - window // 2).clamp_min(0), (t + window // 2).clamp_max(n_tiles - 1)
    return float((hi - lo + 1).float().mean()) * tile


def sliding_tile_for_budget(layout, tile, budget_keys: float):
    """The largest window (odd sizes per axis) whose mean attended keys per query ≤ ``budget_keys``.

    Axes are independent on a full grid, so the mean key count is the product of per-axis means.
    """
    n_tiles = [layout[i] // tile[i] for i in range(3)]
    best, best_keys = (1, 1, 1), -1.0
    for win in itertools.product(*[range(1, 2 * n + 1, 2) for n in n_tiles]):
        m = math.prod(_axis_keys(n_tiles[i], tile[i], win[i]) for i in range(3))
        if best_keys < m <= budget_keys:
            best, best_keys = win, m
    return best, best_keys


def sliding_tile_attention(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def nystrom_attention(q, k, v, landmarks: int):
    """Nyströmformer (Xiong et al., 2021): segment-mean landmarks, Moore–Penrose pseudo-inverse."""
    N, d = q.shape[-2], q.shape[-1]
    if N % landmarks:
        raise ValueError(f"landmarks={landmarks} must divide the token count {N}")
    sc = 1.0 / math.sqrt(d)
    ql = q.reshape(*q.shape[:-2], landmarks, N // landmarks, d).mean(-2)
    kl = k.reshape(*k.shape[:-2], landmarks, N // landmarks, d).mean(-2)
    f1 = torch.softmax(q @ kl.transpose(-1, -2) * sc, -1)
    f2 = torch.softmax(ql @ kl.transpose(-1, -2) * sc, -1)
    f3 = torch.softmax(ql @ k.transpose(-1, -2) * sc, -1)
    return f1 @ (torch.linalg.pinv(f2) @ (f3 @ v))


def nystrom_flops(N: int, d: int, landmarks: int) -> float:
    l_ = landmarks
    return float(2 * N * l_ * d + 2 * l_ * l_ * d + 2 * l_ * N * d + 2 * l_ * N * d + 2 * N * l_ * d + 10 * l_ ** 3)


def misaligned_monarch(q, k, v, layout, perm, **knobs):
    """Control: Monarch on a random token permutation (blocks no longer follow frames/rows)."""
    inv = torch.argsort(perm)
    out = monarch_attention(q[..., perm, :], k[..., perm, :], v[..., perm, :], layout, **knobs)
    return out[..., inv, :]
