"""Data: a parametric generator of video-like Q/K/V, an i.i.d. control, and bouncing-squares videos."""

from __future__ import annotations

import math

import torch


def _grid(layout):
    Fr, H, W = layout
    f, h, w = torch.meshgrid(torch.arange(Fr), torch.arange(H), torch.arange(W), indexing="ij")
    return f.reshape(-1).float(), h.reshape(-1).float(), w.reshape(-1).float()


def structured_qkv(layout, d: int = 32, *, heads: int = 1, objects: int = 3, periodic: float = 2.0,
                   semantic: float = 2.5, mixing: float = 0.5, generator: torch.Generator | None = None):
    """Q, K, V (heads, N, d) whose attention mixes the three ingredients the paper names.

    * periodic spatiotemporal term: RoPE-like cos/sin features of (f, h, w), so that q·k is a sum of
      cosines of the position differences (strength ``periodic``);
    * sparse semantic correspondences: ``objects`` squares moving with constant velocity; tokens on
      the same object share an identity vector in q and k (strength ``semantic``);
    * dense mixing: i.i.d. low-magnitude noise (strength ``mixing``).
    """
    Fr, H, W = layout
    f, h, w = _grid(layout)
    g = generator
    n_freq = d // 6
    feats = []
    for coord, size in ((f, Fr), (h, H), (w, W)):
        freqs = (2 * math.pi / size) * (1 + torch.arange(n_freq).float())
        ph = coord[:, None] * freqs[None, :]
        feats += [torch.cos(ph), torch.sin(ph)]
    pos = torch.cat(feats, -1) / math.sqrt(3 * n_freq)  # (N, 6*n_freq)
    pos = torch.nn.functional.pad(pos, (0, d - pos.shape[1]))
    out = []
    for _ in range(heads):
        rot = torch.linalg.qr(torch.randn(d, d, generator=g))[0]
        ident = torch.zeros(f.shape[0], d)
        for _o in range(objects):
            e = torch.randn(d, generator=g)
            e = e / e.norm()
            size = max(2, H // 4)
            y0, x0 = (torch.rand(2, generator=g) * torch.tensor([H - size, W - size])).tolist()
            vy, vx = ((torch.rand(2, generator=g) - 0.5) * 4).tolist()
            y = (y0 + vy * f) % (H - size)
            x = (x0 + vx * f) % (W - size)
            on = (h >= y.floor()) & (h < y.floor() + size) & (w >= x.floor()) & (w < x.floor() + size)
            ident[on] += e
        base = periodic * math.sqrt(d) ** 0.5 * pos + semantic * math.sqrt(d) ** 0.5 * ident
        q = base + mixing * torch.randn(f.shape[0], d, generator=g)
        k = base + mixing * torch.randn(f.shape[0], d, generator=g)
        out.append(torch.stack([q @ rot, k @ rot, torch.randn(f.shape[0], d, generator=g)]))
    q, k, v = torch.stack(out, 1)
    return q, k, v


def random_qkv(N: int, d: int = 32, *, heads: int = 1, temperature: float = 2.0,
               generator: torch.Generator | None = None):
    """Control: i.i.d. Gaussian Q/K/V (no layout structure), logits of std ≈ ``temperature``."""
    q, k, v = torch.randn(3, heads, N, d, generator=generator)
    s = math.sqrt(temperature) * d ** 0.25 / math.sqrt(math.sqrt(d))
    return q * s, k * s, v


def bouncing_squares(n: int, frames: int = 8, size: int = 16, *, square: int = 4, generator=None):
    """``n`` grayscale videos (n, frames, size, size) in [-1, 1] of one square bouncing off the walls,
    plus its centroid track (n, frames, 2)."""
    if n < 1 or frames < 1 or size <= square:
        raise ValueError(f"need n >= 1, frames >= 1 and size > square, got {n}, {frames}, {size}, {square}")
    g = generator
    pos = torch.rand(n, 2, generator=g) * (size - square)
    vel = (torch.rand(n, 2, generator=g) - 0.5) * 3.0
    vids = -torch.ones(n, frames, size, size)
    track = torch.zeros(n, frames, 2)
    lim = size - square
    for t in range(frames):
        for i in range(n):
            y, x = int(round(pos[i, 0].item())), int(round(pos[i, 1].item()))
            vids[i, t, y:y + square, x:x + square] = 1.0
            track[i, t] = torch.tensor([y + (square - 1) / 2, x + (square - 1) / 2])
        pos = pos + vel
        over, under = pos > lim, pos < 0
        pos = torch.where(over, 2 * lim - pos, torch.where(under, -pos, pos))
        vel = torch.where(over | under, -vel, vel)
    return vids, track
