"""A tiny frame-chunk-causal video DiT trained by flow matching, with a pluggable attention op.

Tokens are 2×2 patches of every frame in (frames, rows, cols) order. Each frame carries its own
noise level (diffusion-forcing style), attention is block-causal over chunks of ``chunk_frames``
frames, and generation runs chunk by chunk with a few Euler steps per chunk, clean past chunks as
context — the few-step autoregressive regime of the paper, in miniature.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from monarchrt import baselines as B
from monarchrt.monarch import monarch_attention


def chunk_mask(layout, chunk_frames: int, device=None) -> torch.Tensor:
    """(N, N) bool, True where a query may attend: keys in its own or an earlier chunk."""
    Fr, H, W = layout
    c = torch.arange(Fr * H * W, device=device) // (H * W) // chunk_frames
    return c[None, :] <= c[:, None]


class AttentionOp:
    """``kind`` ∈ dense | monarch | topk | sliding_tile, all block-causal over frame chunks."""

    def __init__(self, kind: str, layout, chunk_frames: int, *, monarch_knobs=None, topk: int = 0, window=None,
                 tile=None):
        if kind not in ("dense", "monarch", "topk", "sliding_tile"):
            raise ValueError(f"kind must be dense, monarch, topk or sliding_tile, got {kind!r}")
        self.kind, self.layout, self.chunk_frames = kind, tuple(layout), chunk_frames
        self.monarch_knobs, self.topk = dict(monarch_knobs or {}), topk
        self.mask = chunk_mask(layout, chunk_frames)
        if kind == "sliding_tile":
            self.mask = self.mask & B.sliding_tile_mask(layout, tile, window)

    def __call__(self, q, k, v):
        if self.kind == "monarch":
            return monarch_attention(q, k, v, self.layout, causal_frames=True, chunk_frames=self.chunk_frames,
                                     backend="torch", **self.monarch_knobs)
        if self.kind == "topk":
            return B.topk_attention(q, k, v, self.topk, causal_mask=self.mask.to(q.device))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask.to(q.device))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(dim, elementwise_affine=False), nn.LayerNorm(dim, elementwise_affine=False)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.mod = nn.Linear(dim, 4 * dim)  # adaLN: shift/scale for both sublayers, from the noise level
        nn.init.zeros_(self.mod.weight)
        nn.init.zeros_(self.mod.bias)

    def forward(self, x, temb, attn):
        s1, b1, s2, b2 = self.mod(temb).chunk(4, -1)
        h = self.n1(x) * (1 + s1) + b1
        q, k, v = rearrange(self.qkv(h), "b n (t h d) -> t b h n d", t=3, h=self.heads)
        x = x + self.proj(rearrange(attn(q, k, v), "b h n d -> b n (h d)"))
        return x + self.mlp(self.n2(x) * (1 + s2) + b2)


class TinyVideoDiT(nn.Module):
    """Velocity model v(x_t, t) for videos (B, F, S, S); ``t`` is per frame (B, F)."""

    def __init__(self, frames: int = 8, size: int = 16, patch: int = 2, dim: int = 128, depth: int = 4,
                 heads: int = 4):
        super().__init__()
        self.frames, self.size, self.patch = frames, size, patch
        self.layout = (frames, size // patch, size // patch)
        self.embed = nn.Linear(patch * patch, dim)
        self.pos_f = nn.Parameter(torch.randn(frames, 1, dim) * 0.02)
        self.pos_s = nn.Parameter(torch.randn(1, (size // patch) ** 2, dim) * 0.02)
        self.temb = nn.Sequential(nn.Linear(16, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.out = nn.Linear(dim, patch * patch)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def _tokens(self, x):
        return rearrange(x, "b f (h p) (w q) -> b (f h w) (p q)", p=self.patch, q=self.patch)

    def forward(self, x, t, attn):
        hw = (self.size // self.patch) ** 2
        freqs = torch.exp(torch.linspace(0, math.log(100.0), 8, device=x.device))
        te = torch.cat([torch.sin(t[..., None] * freqs), torch.cos(t[..., None] * freqs)], -1)  # (B,F,16)
        temb = self.temb(te).repeat_interleave(hw, dim=1)  # (B, N, dim)
        h = self.embed(self._tokens(x)) + (self.pos_f + self.pos_s).reshape(1, -1, self.pos_s.shape[-1])
        for blk in self.blocks:
            h = blk(h, temb, attn)
        g = self.size // self.patch
        return rearrange(self.out(h), "b (f h w) (p q) -> b f (h p) (w q)", f=self.frames, h=g, w=g, p=self.patch)


def flow_matching_loss(model, x0, attn, generator=None, reduce: bool = True):
    """Rectified-flow loss with one noise level per frame: x_t = (1−t)x0 + tε, target ε − x0."""
    t = torch.rand(x0.shape[:2], generator=generator)
    eps = torch.randn(x0.shape, generator=generator)
    xt = (1 - t[..., None, None]) * x0 + t[..., None, None] * eps
    err = (model(xt, t, attn) - (eps - x0)).square().mean((-1, -2, -3))
    return err.mean() if reduce else err


@torch.no_grad()
def rollout(model, context, attn, chunk_frames: int, steps: int = 4, generator=None):
    """Generate the frames after ``context`` (B, Fc, S, S) chunk by chunk with ``steps`` Euler steps each."""
    Bn, Fc = context.shape[:2]
    Fr = model.frames
    x = torch.zeros(Bn, Fr, model.size, model.size)
    x[:, :Fc] = context
    for start in range(Fc, Fr, chunk_frames):
        sl = slice(start, start + chunk_frames)
        x[:, sl] = torch.randn(x[:, sl].shape, generator=generator)
        x[:, start + chunk_frames:] = torch.randn(x[:, start + chunk_frames:].shape, generator=generator)
        for i in range(steps):
            t_now, dt = 1.0 - i / steps, 1.0 / steps
            t = torch.zeros(Bn, Fr)
            t[:, sl] = t_now
            t[:, start + chunk_frames:] = 1.0  # future frames: pure noise (causal, so they do not matter)
            x[:, sl] = x[:, sl] - dt * model(x, t, attn)[:, sl]
    return x


def centroids(videos, threshold: float = 0.0):
    """(B, F, 2) intensity-weighted centroid of the pixels above ``threshold``."""
    w = (videos - threshold).clamp_min(0)
    ys = torch.arange(videos.shape[-2], dtype=videos.dtype)
    xs = torch.arange(videos.shape[-1], dtype=videos.dtype)
    tot = w.sum((-1, -2)).clamp_min(1e-6)
    return torch.stack([(w.sum(-1) * ys).sum(-1) / tot, (w.sum(-2) * xs).sum(-1) / tot], -1)
