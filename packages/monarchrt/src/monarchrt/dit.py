"""A tiny frame-chunk-causal video DiT trained by flow matching, with a pluggable attention op.

Tokens are 2×2 patches of every frame in (frames, rows, cols) order. Each frame carries its own
noise level (diffusion-forcing style), attention is block-causal over chunks of ``chunk_frames``
frames, and generation runs chunk by chunk with a few Euler steps per chunk, clean past chunks as
context — the few-step autoregressive regime of the paper, in miniature. With a :class:`KVCache`
the sampler runs only the current chunk's tokens and reuses the keys/values of past frames (each
finished chunk is run once more at noise level 0 to fill the cache, as in Self-Forcing); since
attention is block-causal this equals recomputing the whole prefix at every step.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from monarchrt import baselines as B
from monarchrt.monarch import monarch_attention, monarch_chunk_attention


def chunk_mask(layout, chunk_frames: int, device=None) -> torch.Tensor:
    """(N, N) bool, True where a query may attend: keys in its own or an earlier chunk."""
    Fr, H, W = layout
    c = torch.arange(Fr * H * W, device=device) // (H * W) // chunk_frames
    return c[None, :] <= c[:, None]


KINDS = ("dense", "monarch", "topk", "sliding_tile", "uniform")


class AttentionOp:
    """``kind`` ∈ dense | monarch | topk | sliding_tile | uniform, all block-causal over frame chunks.

    ``uniform`` is a control: every query averages the values of all the keys it may see (the
    attention weights are uniform over the causally visible keys, whatever q and k are), so a
    quality test that it passes cannot tell content-based attention from none.

    ``backend`` (Monarch only): ``"auto"`` follows the tensors (the Triton kernels for CUDA tensors, the
    torch reference on CPU), ``"torch"`` always the reference.
    """

    def __init__(self, kind: str, layout, chunk_frames: int, *, monarch_knobs=None, topk: int = 0, window=None,
                 tile=None, backend: str = "auto"):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if backend not in ("auto", "torch"):
            raise ValueError(f"backend must be 'auto' or 'torch', got {backend!r}")
        self.kind, self.layout, self.chunk_frames, self.backend = kind, tuple(layout), chunk_frames, backend
        self.monarch_knobs, self.topk = dict(monarch_knobs or {}), topk
        self.mask = chunk_mask(layout, chunk_frames)
        if kind == "sliding_tile":
            self.mask = self.mask & B.sliding_tile_mask(layout, tile, window)

    def __call__(self, q, k, v):
        if self.kind == "monarch":
            return monarch_attention(q, k, v, self.layout, causal_frames=True, chunk_frames=self.chunk_frames,
                                     backend=self.backend, **self.monarch_knobs)
        if self.kind == "topk":
            return B.topk_attention(q, k, v, self.topk, causal_mask=self.mask.to(q.device))
        if self.kind == "uniform":  # zero logits: softmax is uniform over the visible keys
            q = torch.zeros_like(q)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask.to(q.device))

    def chunk(self, q, k, v, start_frame: int):
        """The rows of one chunk (starting at ``start_frame``) from its queries and keys of frames 0..end."""
        hw = self.layout[1] * self.layout[2]
        if self.kind == "monarch":
            return monarch_chunk_attention(q, k, v, self.layout[1:], chunk_frames=self.chunk_frames,
                                           backend=self.backend, **self.monarch_knobs)
        rows = slice(start_frame * hw, start_frame * hw + q.shape[-2])
        mask = self.mask[rows, : k.shape[-2]].to(q.device)
        if self.kind == "topk":
            return B.topk_attention(q, k, v, self.topk, causal_mask=mask)
        if self.kind == "uniform":
            q = torch.zeros_like(q)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class KVCache:
    """Per-layer keys/values of the frames generated so far (``frames`` of them)."""

    def __init__(self, depth: int):
        self.k, self.v, self.frames = [None] * depth, [None] * depth, 0

    def attention(self, attn: AttentionOp, layer: int, commit: bool):
        """The attention callable of ``layer`` for the chunk that starts at frame ``self.frames``."""
        def attend(q, k, v):
            ks = k if self.k[layer] is None else torch.cat([self.k[layer], k], -2)
            vs = v if self.v[layer] is None else torch.cat([self.v[layer], v], -2)
            if commit:
                self.k[layer], self.v[layer] = ks, vs
            return attn.chunk(q, ks, vs, self.frames)
        return attend


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(dim, elementwise_affine=False), nn.LayerNorm(dim, elementwise_affine=False)
        # no qkv bias: a key bias is invisible to softmax (zero gradient, which Adam turns into noise
        # steps), and the adaLN shift below already gives q and v a learnable offset
        self.qkv, self.proj = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim)
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


def _sincos(n: int, width: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(20.0) * torch.arange(width // 2, dtype=torch.float32) / max(1, width // 2))
    return torch.cat([torch.sin(pos * freq * math.pi / 2), torch.cos(pos * freq * math.pi / 2)], -1)


def sincos_positions(layout, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Initial frame (F, 1, dim) and spatial (1, H*W, dim) embeddings: sin/cos of the row, the column and
    the frame index, each in its own third of the channels (the remainder zero)."""
    Fr, H, W = layout
    w = dim // 3 // 2 * 2
    ps = torch.zeros(H, W, dim)
    pf = torch.zeros(Fr, 1, dim)
    if w:
        ps[..., :w] = _sincos(H, w)[:, None, :]
        ps[..., w:2 * w] = _sincos(W, w)[None, :, :]
        pf[:, 0, 2 * w:3 * w] = _sincos(Fr, w)
    return pf, ps.reshape(1, H * W, dim)


class TinyVideoDiT(nn.Module):
    """Velocity model v(x_t, t) for videos (B, F, S, S); ``t`` is per frame (B, F)."""

    def __init__(self, frames: int = 8, size: int = 16, patch: int = 2, dim: int = 128, depth: int = 4,
                 heads: int = 4):
        super().__init__()
        self.frames, self.size, self.patch = frames, size, patch
        self.layout = (frames, size // patch, size // patch)
        self.embed = nn.Linear(patch * patch, dim)
        # learnable positions, initialised with fixed sin/cos features of (row, col) and frame: their dot
        # products already vary smoothly with the position difference, so locality in attention is there
        # from step 0 (random 0.02 initial positions left the DiT unable to find the square in the context
        # within the CPU budget: 4.7 px tracking error after 1200 steps against 4.3 px for the frame centre)
        pf, ps = sincos_positions(self.layout, dim)
        self.pos_f = nn.Parameter(pf)
        self.pos_s = nn.Parameter(ps)
        self.temb = nn.Sequential(nn.Linear(16, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.out = nn.Linear(dim, patch * patch)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def _tokens(self, x):
        return rearrange(x, "b f (h p) (w q) -> b (f h w) (p q)", p=self.patch, q=self.patch)

    def forward(self, x, t, attn, *, cache: KVCache | None = None, commit: bool = False):
        """x (B, F', S, S), t (B, F'). Without ``cache`` F' = ``frames``; with it, x is the chunk that
        starts at frame ``cache.frames``, and ``commit`` appends its keys/values to the cache."""
        hw = (self.size // self.patch) ** 2
        f0, nf = (0 if cache is None else cache.frames), x.shape[1]
        freqs = torch.exp(torch.linspace(0, math.log(100.0), 8, device=x.device))
        te = torch.cat([torch.sin(t[..., None] * freqs), torch.cos(t[..., None] * freqs)], -1)  # (B,F',16)
        temb = self.temb(te).repeat_interleave(hw, dim=1)  # (B, N', dim)
        pos = (self.pos_f[f0:f0 + nf] + self.pos_s).reshape(1, -1, self.pos_s.shape[-1])
        h = self.embed(self._tokens(x)) + pos
        for i, blk in enumerate(self.blocks):
            h = blk(h, temb, attn if cache is None else cache.attention(attn, i, commit))
        if cache is not None and commit:
            cache.frames += nf
        g = self.size // self.patch
        return rearrange(self.out(h), "b (f h w) (p q) -> b f (h p) (w q)", f=nf, h=g, w=g, p=self.patch)


def flow_matching_terms(model, x0, t, eps, attn, weight=None):
    """Per-video rectified-flow loss at x_t = (1−t)x0 + tε (one t per frame), target ε − x0.

    ``weight`` (B, F): per-frame loss weights (e.g. 0 for clean context frames, which have nothing to
    denoise); the per-video loss is the weighted mean over frames. ``None``: every frame counts.
    """
    xt = (1 - t[..., None, None]) * x0 + t[..., None, None] * eps
    err = (model(xt, t, attn) - (eps - x0)).square().mean((-1, -2))  # (B, F)
    if weight is None:
        return err.mean(-1)
    return (err * weight).sum(-1) / weight.sum(-1).clamp_min(1e-12)


def noise_levels(batch: int, frames: int, chunk_frames: int, generator=None, *, context_mix: float = 0.0):
    """Training noise levels t (B, F) and loss weights (B, F).

    Every video first gets one level per frame, t ~ U(0, 1) (diffusion forcing). A fraction
    ``context_mix`` of the videos then follows the sampler's pattern instead: a random chunk c ≥ 1 is
    the one being generated, the frames before it are clean context (t = 0, weight 0: nothing to
    denoise), the chunk's frames share one level t ~ U(0, 1), later frames keep their own levels
    (the block-causal mask hides them from chunk c). Drawn on ``generator`` (CPU).
    """
    if not 0.0 <= float(context_mix) <= 1.0:
        raise ValueError(f"context_mix must be in [0, 1], got {context_mix}")
    t = torch.rand(batch, frames, generator=generator)
    w = torch.ones(batch, frames)
    n_chunks = frames // chunk_frames
    if context_mix == 0 or n_chunks < 2:
        return t, w
    pick = torch.rand(batch, generator=generator) < context_mix
    start = torch.randint(1, n_chunks, (batch,), generator=generator)[:, None] * chunk_frames
    level = torch.rand(batch, 1, generator=generator).expand(batch, frames)
    f = torch.arange(frames)[None]
    ctx = pick[:, None] & (f < start)
    cur = pick[:, None] & (f >= start) & (f < start + chunk_frames)
    t = torch.where(ctx, 0.0, torch.where(cur, level, t))
    return t, torch.where(ctx, 0.0, w)


def flow_matching_loss(model, x0, attn, generator=None, reduce: bool = True):
    """:func:`flow_matching_terms` with t ~ U(0, 1) per frame and ε ~ N(0, I) drawn from ``generator``
    (on the CPU, then moved to ``x0``'s device)."""
    t = torch.rand(x0.shape[:2], generator=generator).to(x0.device)
    eps = torch.randn(x0.shape, generator=generator).to(x0.device)
    err = flow_matching_terms(model, x0, t, eps, attn)
    return err.mean() if reduce else err


def context_loss(model, x0, attn, chunk_frames: int, generator=None):
    """Per-video loss in the sampler's setting: clean context, one chunk at one noise level.

    For each chunk c ≥ 1 the frames before it are clean (t = 0), its frames share a level t ~ U(0, 1),
    and the loss is the chunk's; the per-video value is the mean over the chunks. ε and t are drawn on
    ``generator`` (CPU) and moved to ``x0``'s device.
    """
    Bn, Fr = x0.shape[:2]
    out = []
    for start in range(chunk_frames, Fr, chunk_frames):
        t = torch.rand(Bn, Fr, generator=generator)
        t[:, :start] = 0.0
        t[:, start:start + chunk_frames] = t[:, start:start + 1]
        eps = torch.randn(x0.shape, generator=generator)
        w = torch.zeros(Bn, Fr)
        w[:, start:start + chunk_frames] = 1.0
        out.append(flow_matching_terms(model, x0, t.to(x0.device), eps.to(x0.device), attn, w.to(x0.device)))
    return torch.stack(out).mean(0)


@torch.no_grad()
def rollout(model, context, attn, chunk_frames: int, steps: int = 4, generator=None, *, kv_cache: bool = True):
    """Generate the frames after ``context`` (B, Fc, S, S) chunk by chunk with ``steps`` Euler steps each.

    ``kv_cache=True`` runs only the current chunk through the model and reuses past keys/values;
    ``False`` recomputes the whole video at every step (future frames are zeros, which the causal
    mask hides). Both draw the same noise, so they give the same video to float tolerance.
    """
    Bn, Fc = context.shape[:2]
    Fr, cf = model.frames, chunk_frames
    if Fc % cf or Fr % cf:
        raise ValueError(f"context frames {Fc} and model frames {Fr} must be multiples of chunk_frames={cf}")
    dev = context.device
    x = torch.zeros(Bn, Fr, model.size, model.size, device=dev, dtype=context.dtype)
    x[:, :Fc] = context
    cache = KVCache(len(model.blocks)) if kv_cache else None
    if cache is not None:
        for start in range(0, Fc, cf):
            model(context[:, start:start + cf], torch.zeros(Bn, cf, device=dev), attn, cache=cache, commit=True)
    for start in range(Fc, Fr, cf):
        sl = slice(start, start + cf)
        # drawn on the CPU generator, so a CUDA rollout draws the same noise as a CPU one
        xc = torch.randn(x[:, sl].shape, generator=generator).to(dev, context.dtype)
        for i in range(steps):
            t_now, dt = 1.0 - i / steps, 1.0 / steps
            if cache is not None:
                v = model(xc, torch.full((Bn, cf), t_now, device=dev), attn, cache=cache)
            else:
                x[:, sl] = xc
                t = torch.zeros(Bn, Fr, device=dev)
                t[:, sl] = t_now
                t[:, start + cf:] = 1.0
                v = model(x, t, attn)[:, sl]
            xc = xc - dt * v
        x[:, sl] = xc
        if cache is not None and start + cf < Fr:
            model(xc, torch.zeros(Bn, cf, device=dev), attn, cache=cache, commit=True)
    return x


@torch.no_grad()
def capture_qkv(model, x, t, attn) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Q, K, V (B, heads, N, d) of every attention layer, hooked on the qkv projections during one forward."""
    got = []
    hooks = [blk.qkv.register_forward_hook(lambda mod, inp, out, h=blk.heads: got.append(
        rearrange(out, "b n (t h d) -> t b h n d", t=3, h=h).unbind(0))) for blk in model.blocks]
    try:
        model(x, t, attn)
    finally:
        for hk in hooks:
            hk.remove()
    return got


def centroids(videos, threshold: float = 0.0):
    """(B, F, 2) intensity-weighted centroid of the pixels above ``threshold``."""
    w = (videos - threshold).clamp_min(0)
    ys = torch.arange(videos.shape[-2], dtype=videos.dtype, device=videos.device)
    xs = torch.arange(videos.shape[-1], dtype=videos.dtype, device=videos.device)
    tot = w.sum((-1, -2)).clamp_min(1e-6)
    return torch.stack([(w.sum(-1) * ys).sum(-1) / tot, (w.sum(-2) * xs).sum(-1) / tot], -1)
