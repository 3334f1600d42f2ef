"""L-VQVAE: a VQ-VAE whose every token is read from one short window of the series.

Shapes: a batch of series is ``x`` of shape ``(B, T, C)`` (``T = window``, ``C = n_channels``). Token
``j`` (``0 ≤ j < L``, ``L = (T − rf)/s + 1``) is the cross-attention of one learned query over the
embedded time steps ``x[j·s : j·s + rf]`` only (``rf = receptive_field``, ``s = stride``), so it depends on
no other time step: perturbing ``x[t]`` moves only the tokens whose window covers ``t``
(tests: perturbation and Jacobian). Each token is quantised by an EMA L2 codebook with dead-code reset
(``vector_quantize_pytorch.VectorQuantize``), and decoded either locally (each code to its own ``rf × C``
patch, overlapping patches averaged) or globally (a transformer over all ``L`` codes, then the same patch
layout). With the tiny defaults (T = 32, rf = 4, s = 2) L = 15.

Reference: arXiv 2608.19727 (L-VQVAE / LVQMark). The layer sizes, the overlap-add decoders and the
loss weights are our choices; the four-stage training follows the official repository's stages.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from vector_quantize_pytorch import VectorQuantize

from paperworks import check_int

__all__ = ["LVQVAE", "LocalEncoder", "GlobalEncoder", "PatchDecoder", "GlobalDecoder", "check_series",
           "n_tokens_of"]


def n_tokens_of(window: int, receptive_field: int, stride: int) -> int:
    """``L = (T − rf)/s + 1``; refuses a window the windows do not tile exactly."""
    if receptive_field > window:
        raise ValueError(f"receptive_field ({receptive_field}) must be <= window ({window})")
    if (window - receptive_field) % stride:
        raise ValueError(f"(window - receptive_field) must be a multiple of stride: window={window}, "
                         f"receptive_field={receptive_field}, stride={stride}")
    return (window - receptive_field) // stride + 1


def check_series(x, *, n_channels: int, window: int, name: str = "x") -> torch.Tensor:
    """``x`` as a float tensor ``(B, window, n_channels)``: NaN/inf, wrong channels or a short series refused."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__") and not torch.is_tensor(x):
        raise TypeError(f"{name} must be an array or tensor of shape (B, T, C), got {type(x).__name__}")
    x = torch.as_tensor(x)
    if not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
        raise TypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
    x = x.float() if not x.is_floating_point() else x
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise ValueError(f"{name} must have shape (B, T, C), got {tuple(x.shape)}")
    if x.shape[2] != n_channels:
        raise ValueError(f"{name} has {x.shape[2]} channels but the model expects n_channels={n_channels}")
    if x.shape[1] < window:
        raise ValueError(f"{name} has {x.shape[1]} time steps, shorter than one window ({window})")
    if x.shape[1] != window:
        raise ValueError(f"{name} has {x.shape[1]} time steps; cut it into windows of {window} first "
                         "(lvqmark.data.windows)")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x


class _CrossAttentionStack(nn.Module):
    """Pre-norm cross-attention blocks: queries attend over keys/values, then an MLP (residual)."""

    def __init__(self, dim: int, layers: int, heads: int):
        super().__init__()
        self.attn = nn.ModuleList(nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(layers))
        self.norm_q = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.norm_kv = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.mlp = nn.ModuleList(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(),
                                               nn.Linear(2 * dim, dim)) for _ in range(layers))

    def forward(self, q, kv):
        for attn, nq, nkv, mlp in zip(self.attn, self.norm_q, self.norm_kv, self.mlp, strict=True):
            k = nkv(kv)
            q = q + attn(nq(q), k, k, need_weights=False)[0]
            q = q + mlp(q)
        return q


class LocalEncoder(nn.Module):
    """Token j = cross-attention of a learned query over ``x[j·s : j·s + rf]`` (relative positions only).

    ``(B, T, C) → (B, L, dim)``. The windows are cut with ``unfold`` before attention, so no token sees a
    time step outside its window, by construction.
    """

    def __init__(self, n_channels, *, window, receptive_field, stride, dim, layers=2, heads=4):
        super().__init__()
        self.rf, self.stride = receptive_field, stride
        self.n_tokens = n_tokens_of(window, receptive_field, stride)
        self.embed = nn.Linear(n_channels, dim)
        self.pos = nn.Parameter(torch.randn(receptive_field, dim) * 0.02)
        self.query = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.blocks = _CrossAttentionStack(dim, layers, heads)

    def forward(self, x):
        b = x.shape[0]
        h = self.embed(x)                                               # (B, T, dim)
        win = h.unfold(1, self.rf, self.stride).permute(0, 1, 3, 2)     # (B, L, rf, dim)
        kv = win.reshape(b * self.n_tokens, self.rf, -1) + self.pos
        q = self.blocks(self.query.expand(kv.shape[0], 1, -1), kv)
        return q.reshape(b, self.n_tokens, -1)


class GlobalEncoder(nn.Module):
    """The SDformer-like baseline encoder: ``L`` learned queries each attend over all ``T`` time steps.

    ``(B, T, C) → (B, L, dim)``; every token depends on every time step (absolute positions).
    """

    def __init__(self, n_channels, *, window, receptive_field, stride, dim, layers=2, heads=4):
        super().__init__()
        self.n_tokens = n_tokens_of(window, receptive_field, stride)
        self.embed = nn.Linear(n_channels, dim)
        self.pos = nn.Parameter(torch.randn(window, dim) * 0.02)
        self.query = nn.Parameter(torch.randn(1, self.n_tokens, dim) * 0.02)
        self.blocks = _CrossAttentionStack(dim, layers, heads)

    def forward(self, x):
        kv = self.embed(x) + self.pos
        return self.blocks(self.query.expand(x.shape[0], -1, -1), kv)


class PatchDecoder(nn.Module):
    """Local decoder: code j → an ``rf × C`` patch at ``j·s``; overlapping patches are averaged."""

    def __init__(self, n_channels, *, window, receptive_field, stride, dim):
        super().__init__()
        self.C, self.T, self.rf, self.stride = n_channels, window, receptive_field, stride
        self.net = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, receptive_field * n_channels))
        L = n_tokens_of(window, receptive_field, stride)
        count = torch.zeros(window)
        for j in range(L):
            count[j * stride:j * stride + receptive_field] += 1
        self.register_buffer("count", count[None, :, None], persistent=False)

    def forward(self, codes):                                           # (B, L, dim) → (B, T, C)
        b, L, _ = codes.shape
        patches = self.net(codes).reshape(b, L, self.rf * self.C).transpose(1, 2)   # (B, rf·C, L)
        out = F.fold(patches, output_size=(self.T, 1), kernel_size=(self.rf, 1), stride=(self.stride, 1))
        # fold lays the (rf·C) rows out channel-major: row c·rf + r is channel c, offset r
        return out.reshape(b, self.C, self.T).transpose(1, 2) / self.count


class GlobalDecoder(nn.Module):
    """Global decoder: a transformer over all ``L`` codes, then a :class:`PatchDecoder` head."""

    def __init__(self, n_channels, *, window, receptive_field, stride, dim, layers=2, heads=4):
        super().__init__()
        L = n_tokens_of(window, receptive_field, stride)
        self.pos = nn.Parameter(torch.randn(L, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.mixer = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = PatchDecoder(n_channels, window=window, receptive_field=receptive_field, stride=stride, dim=dim)

    def forward(self, codes):
        return self.head(codes + self.mixer(codes + self.pos))


class LVQVAE(nn.Module):
    """L-VQVAE (``nn.Module``): local-window encoder, EMA L2 codebook, local and global decoders.

    Args:
        n_channels: C.
        window: T (default 32).
        receptive_field: rf, time steps per token (default 4).
        stride: s between token windows (default 2); L = (T − rf)/s + 1 = 15 with the defaults.
        codebook_size: K (default 64).
        dim: width d (default 64).
        layers: cross-attention layers of the encoder (default 2).
        decay, dead_code_threshold, commitment_weight: the EMA VQ (``vector_quantize_pytorch``): codes
            used fewer than ``dead_code_threshold`` times (EMA count) are reset to batch vectors.

    ``encode(x)`` → tokens ``(B, L)`` (nearest code, no EMA update); ``decode(tokens)`` → ``(B, T, C)``
    (the global decoder once stage 2 trained it, else the local one); ``forward(x)`` →
    ``(recon, tokens, vq_loss)`` (training: EMA updates in train mode).

    Example:
        >>> vae = LVQVAE(5)
        >>> vae.encode(torch.randn(2, 32, 5)).shape
        torch.Size([2, 15])
    """

    encoder_class = LocalEncoder

    def __init__(self, n_channels, *, window=32, receptive_field=4, stride=2, codebook_size=64, dim=64,
                 layers=2, decay=0.8, dead_code_threshold=2.0, commitment_weight=0.25):
        super().__init__()
        check_int(n_channels, "n_channels")
        check_int(window, "window", minimum=2)
        check_int(receptive_field, "receptive_field")
        check_int(stride, "stride")
        check_int(codebook_size, "codebook_size", minimum=2)
        check_int(dim, "dim", minimum=4)
        check_int(layers, "layers")
        if dim % 4:
            raise ValueError(f"dim must be a multiple of 4 (4 attention heads), got {dim}")
        self.config = dict(n_channels=n_channels, window=window, receptive_field=receptive_field, stride=stride,
                           codebook_size=codebook_size, dim=dim, layers=layers, decay=float(decay),
                           dead_code_threshold=float(dead_code_threshold),
                           commitment_weight=float(commitment_weight))
        self.n_channels, self.window, self.codebook_size = n_channels, window, codebook_size
        self.n_tokens = n_tokens_of(window, receptive_field, stride)
        geo = dict(window=window, receptive_field=receptive_field, stride=stride, dim=dim)
        self.encoder = self.encoder_class(n_channels, layers=layers, **geo)
        self.vq = VectorQuantize(dim, codebook_size, decay=decay, threshold_ema_dead_code=dead_code_threshold,
                                 kmeans_init=True, commitment_weight=commitment_weight)
        self.local_decoder = PatchDecoder(n_channels, **geo)
        self.global_decoder = GlobalDecoder(n_channels, **geo)
        self.register_buffer("use_global_decoder", torch.tensor(False))

    @property
    def codebook(self) -> torch.Tensor:
        """The code vectors ``(K, dim)``."""
        return self.vq.codebook

    def _check(self, x):
        return check_series(x, n_channels=self.n_channels, window=self.window).to(self.codebook.device)

    def nearest(self, z):
        """Nearest-code indices of pre-quantisation vectors ``(..., dim)`` (L2)."""
        return torch.cdist(z.reshape(-1, z.shape[-1]), self.codebook).argmin(-1).reshape(z.shape[:-1])

    def encode(self, x) -> torch.Tensor:
        x = self._check(x)
        with torch.no_grad():
            return self.nearest(self.encoder(x))

    def decode(self, tokens, *, decoder: str | None = None) -> torch.Tensor:
        tokens = torch.as_tensor(tokens, device=self.codebook.device)
        if tokens.ndim != 2 or tokens.shape[1] != self.n_tokens or tokens.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"tokens must be an integer tensor (B, {self.n_tokens}), got "
                             f"{tuple(tokens.shape)} {tokens.dtype}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.codebook_size):
            raise ValueError(f"tokens must lie in [0, {self.codebook_size})")
        codes = self.codebook[tokens.long()]
        return self._decode_codes(codes, decoder)

    def _decode_codes(self, codes, decoder=None):
        decoder = decoder or ("global" if bool(self.use_global_decoder) else "local")
        if decoder not in ("local", "global"):
            raise ValueError(f"decoder must be 'local' or 'global', got {decoder!r}")
        return (self.global_decoder if decoder == "global" else self.local_decoder)(codes)

    def forward(self, x, *, decoder: str | None = None):
        x = self._check(x)
        q, tokens, vq_loss = self.vq(self.encoder(x))
        return self._decode_codes(q, decoder), tokens, vq_loss

    # ---- save / load -------------------------------------------------------------------------------
    def to_state(self) -> dict:
        return {"class": type(self).__name__, "config": dict(self.config),
                "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()}}

    @classmethod
    def from_state(cls, doc: dict):
        if doc.get("class") != cls.__name__:
            raise ValueError(f"the saved model is a {doc.get('class')!r}, not a {cls.__name__}")
        model = cls(**doc["config"])
        model.load_state_dict(doc["state_dict"])
        return model.eval()

    def save(self, path) -> Path:
        from lvqmark.io import save_doc

        return save_doc(self.to_state(), path)

    @classmethod
    def load(cls, path):
        """A model saved by :meth:`save` (``torch.load(weights_only=True)``)."""
        from lvqmark.io import load_doc

        return cls.from_state(load_doc(path))


def train_vae(vae: LVQVAE, x: torch.Tensor, *, steps: int, global_steps: int, batch: int = 128, lr: float = 2e-3,
              generator: torch.Generator | None = None, log_every: int = 0) -> dict:
    """Stages 1–2: (1) encoder + codebook + local decoder on MSE + commitment; (2) the global decoder on
    frozen tokens (initialised from the local decoder's patch head). Returns the final losses."""
    from lvqmark.io import batches

    out = {}
    vae.train()
    opt = torch.optim.Adam([p for n, p in vae.named_parameters() if not n.startswith("global_decoder")], lr=lr)
    for i, xb in enumerate(batches(x, batch, steps, generator)):
        recon, _, vq_loss = vae(xb, decoder="local")
        mse = F.mse_loss(recon, xb)
        loss = mse + vq_loss.mean()
        _step(opt, loss, "L-VQVAE stage 1", i)
        out["stage1_mse"] = float(mse.detach())
    vae.eval()
    if global_steps > 0:
        vae.global_decoder.head.load_state_dict(vae.local_decoder.state_dict())
        opt = torch.optim.Adam(vae.global_decoder.parameters(), lr=lr)
        with torch.no_grad():
            codes = vae.codebook[vae.nearest(vae.encoder(x))]
        for i, (cb, xb) in enumerate(batches((codes, x), batch, global_steps, generator)):
            mse = F.mse_loss(vae.global_decoder(cb), xb)
            _step(opt, mse, "global decoder stage 2", i)
            out["stage2_mse"] = float(mse.detach())
        vae.use_global_decoder.fill_(True)
    return out


def _step(opt, loss, what, i):
    value = float(loss.detach())
    if not math.isfinite(value):
        raise FloatingPointError(f"{what}: loss is {value} at step {i}")
    opt.zero_grad()
    loss.backward()
    opt.step()


def clone_encoder(vae: LVQVAE) -> nn.Module:
    """A trainable copy of the model's encoder (the RobustEncoder's starting point)."""
    return copy.deepcopy(vae.encoder)
