"""Monarch attention aligned to a video token layout (MonarchRT, arXiv 2602.12271).

Softmax attention ``A = softmax(S)``, ``S = scale · Q Kᵀ``, is the maximiser over row-stochastic
matrices of the variational objective

    f(A) = Σ_q [ ⟨A_q, S_q⟩ + H(A_q) ]          (max = Σ_q logsumexp S_q, reached at softmax).

Monarch attention maximises ``f`` over Monarch-structured maps instead. Keys are cut into ``m``
blocks of ``b`` tokens (tiles of the (frames, height, width) grid, ``block=(bf, bh, bw)``; the
default is one frame per block). Queries are sorted into *classes* ``c(q)``; the map is

    A[q, (k, i)] = L[q, k] · R[k, c(q), i],        Σ_k L[q, k] = 1,  Σ_i R[k, c, i] = 1,

i.e. ``A = L̂ R̂`` with ``R̂`` block-diagonal over key blocks and ``L̂`` block-diagonal over classes
after a permutation — a Monarch matrix ``P L Pᵀ R``. Its support is full (every key gets weight).
In the plain Monarch case a query's class is its position inside its own tile, so one R row is
shared by the queries at the same in-tile position of every tile. Exact alternating maximisation
of ``f`` (``num_iters`` rounds, starting from uniform ``L``):

    R-step:  R[k, c, :] = softmax_i( scale · Q̃[k, c] · K[k, i] ),  Q̃[k, c] = Σ_{q∈c} L[q,k] Q_q / Σ_{q∈c} L[q,k]
    L-step:  L[q, :]    = softmax_k( scale · Q_q · K̃[k, c(q)] + H(R[k, c(q), :]) ),  K̃[k, c] = Σ_i R[k,c,i] K[k,i]

and the output is ``O_q = Σ_k L[q,k] Σ_i R[k,c(q),i] V[k,i]``. Each step maximises ``f`` exactly
in its factor, so ``f`` never decreases with ``num_iters``.

Tiled extension (our reading of the abstract's "tiled Monarch"; the paper's exact definition was not
available): ``h_reduce``/``w_reduce`` merge ``h_reduce × w_reduce`` cells of in-tile positions into one
class (fewer R rows → fewer FLOPs); ``f_tied=False`` unties the classes across frame tiles (one set of
R rows per query frame tile → more FLOPs, more expressive).

Block-causal chunks (``causal_frames=True``, ``chunk_frames`` frames per chunk): a query attends to
blocks of its own and earlier chunks only, and classes never mix chunks, so a chunk's output is a
function of its own queries and past keys/values only — which is what makes the KV cache of
:class:`MonarchKVCache` exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from einops import rearrange
from torch import nn

from monarchrt.kernels import block_attention, block_attention_ref
from paperworks import check_float, check_int


@dataclass(frozen=True)
class MonarchPlan:
    """How tokens of a (F, H, W) layout map to key blocks and query classes."""

    F: int
    H: int
    W: int
    bf: int
    bh: int
    bw: int
    h_reduce: int
    w_reduce: int
    gf: int  # frames per query group (classes never span groups)
    causal: bool
    chunk_frames: int

    @property
    def N(self) -> int:
        return self.F * self.H * self.W

    @property
    def m(self) -> int:  # key blocks
        return (self.F // self.bf) * (self.H // self.bh) * (self.W // self.bw)

    @property
    def b(self) -> int:  # tokens per key block
        return self.bf * self.bh * self.bw

    @property
    def G(self) -> int:  # query groups
        return self.F // self.gf

    @property
    def C(self) -> int:  # classes per group
        return self.bf * (self.bh // self.h_reduce) * (self.bw // self.w_reduce)

    @property
    def S(self) -> int:  # queries per class
        return self.N // (self.G * self.C)

    def primitive_shapes(self, d: int, e: int | None = None) -> dict[str, tuple[int, int, int, int]]:
        """``(M, N, D, E)`` of each block-attention call per batch item (queries, keys, key width, value
        width): the R-step ``"R"``, the L-step ``"L"`` and, from the second round on, the transposed call ``"T"``."""
        e = d if e is None else e
        return {"R": (self.G * self.C, self.b, d, d + e), "L": (self.S, self.m, d, e), "T": (self.m, self.S, d, d)}

    def _dims(self):
        return dict(fo=self.gf // self.bf, fi=self.bf, hc=self.bh // self.h_reduce, hr=self.h_reduce,
                    ho=self.H // self.bh, wc=self.bw // self.w_reduce, wr=self.w_reduce, wo=self.W // self.bw)

    def queries(self, x):  # (..., N, d) -> (..., G, C, S, d)
        return rearrange(x, "... (go fo fi ho hc hr wo wc wr) d -> ... go (fi hc wc) (fo ho wo hr wr) d",
                         **self._dims())

    def unqueries(self, x):
        return rearrange(x, "... go (fi hc wc) (fo ho wo hr wr) d -> ... (go fo fi ho hc hr wo wc wr) d",
                         **self._dims())

    def keys(self, x):  # (..., N, d) -> (..., m, b, d)
        return rearrange(x, "... (kf fi ho hi wo wi) d -> ... (kf ho wo) (fi hi wi) d",
                         fi=self.bf, ho=self.H // self.bh, hi=self.bh, wo=self.W // self.bw, wi=self.bw)

    def allowed(self, device=None) -> torch.Tensor:
        """(G, m) bool: may query group g attend to key block k."""
        if not self.causal:
            return torch.ones(self.G, self.m, dtype=torch.bool, device=device)
        nhw = (self.H // self.bh) * (self.W // self.bw)
        kframe = (torch.arange(self.m, device=device) // nhw) * self.bf
        gframe = torch.arange(self.G, device=device) * self.gf
        return (kframe[None, :] // self.chunk_frames) <= (gframe[:, None] // self.chunk_frames)

    def token_class(self) -> torch.Tensor:
        """(N,) global class id of every query token (in layout order)."""
        ids = torch.arange(self.G * self.C).reshape(self.G, self.C, 1, 1).expand(-1, -1, self.S, 1)
        return self.unqueries(ids.float()).reshape(-1).long()

    def token_block(self) -> torch.Tensor:
        """(N,) key block of every token (in layout order)."""
        ids = torch.arange(self.m).reshape(self.m, 1, 1).expand(-1, self.b, 1).float()
        return rearrange(ids, "(kf ho wo) (fi hi wi) d -> (kf fi ho hi wo wi) d", fi=self.bf,
                         ho=self.H // self.bh, hi=self.bh, wo=self.W // self.bw, wi=self.bw).reshape(-1).long()

    def token_in_block(self) -> torch.Tensor:
        """(N,) position of every token inside its key block."""
        ids = torch.arange(self.b).reshape(1, self.b, 1).expand(self.m, -1, 1).float()
        return rearrange(ids, "(kf ho wo) (fi hi wi) d -> (kf fi ho hi wo wi) d", fi=self.bf,
                         ho=self.H // self.bh, hi=self.bh, wo=self.W // self.bw, wi=self.bw).reshape(-1).long()


def _as_int(name, x, minimum=1):
    """``x`` as an int (Python or NumPy integers; bools, floats such as 4.5 and strings refused)."""
    return check_int(x, name, minimum=minimum)


def _as_bool(name, x) -> bool:
    """A real bool (``"False"`` is a non-empty string, so it would switch a knob on)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise TypeError(f"{name} must be a bool, got {type(x).__name__} {x!r}")


def make_plan(layout, *, block=None, h_reduce: int = 1, w_reduce: int = 1, f_tied: bool = True,
              causal_frames: bool = False, chunk_frames: int | None = None) -> MonarchPlan:
    """Validate the knobs and build the :class:`MonarchPlan` (see :func:`monarch_attention`)."""
    if not isinstance(layout, (tuple, list)) or len(layout) != 3:
        raise ValueError(f"layout must be a (frames, height, width) triple, got {layout!r}")
    F, H, W = (_as_int(f"layout[{i}]", x) for i, x in enumerate(layout))
    causal_frames, f_tied = _as_bool("causal_frames", causal_frames), _as_bool("f_tied", f_tied)
    if chunk_frames is not None and not causal_frames:
        raise ValueError("chunk_frames needs causal_frames=True (without it every frame attends to every frame, "
                         "so chunk_frames would be ignored)")
    block = (1, H, W) if block is None else tuple(block)
    if len(block) != 3:
        raise ValueError(f"block must be a (bf, bh, bw) triple, got {block!r}")
    bf, bh, bw = (_as_int(f"block[{i}]", x) for i, x in enumerate(block))
    for name, size, dim in (("block[0]", bf, F), ("block[1]", bh, H), ("block[2]", bw, W)):
        if dim % size:
            raise ValueError(f"{name}={size} must divide the layout dimension {dim}")
    _as_int("h_reduce", h_reduce)
    _as_int("w_reduce", w_reduce)
    if bh % h_reduce:
        raise ValueError(f"h_reduce={h_reduce} must divide the block height {bh}")
    if bw % w_reduce:
        raise ValueError(f"w_reduce={w_reduce} must divide the block width {bw}")
    if causal_frames:
        chunk = bf if chunk_frames is None else _as_int("chunk_frames", chunk_frames)
        if chunk % bf or F % chunk:
            raise ValueError(f"chunk_frames={chunk} must be a multiple of block[0]={bf} and divide frames={F}")
        gf = chunk if f_tied else bf
    else:
        chunk = F
        gf = F if f_tied else bf
    return MonarchPlan(F, H, W, bf, bh, bw, h_reduce, w_reduce, gf, bool(causal_frames), chunk)


def _check_call(num_iters, backend, scale, enable_gqa) -> tuple[int, bool]:
    """The per-call knobs of :func:`monarch_attention` (also checked by ``MonarchAttention`` at construction)."""
    num_iters = _as_int("num_iters", num_iters)
    if backend not in ("auto", "torch"):
        raise ValueError(f"backend must be 'auto' or 'torch', got {backend!r}")
    if scale is not None:
        check_float(scale, "scale", minimum=0.0, open_minimum=True)
    return num_iters, _as_bool("enable_gqa", enable_gqa)


def _check_qkv(q, k, v, N=None, enable_gqa: bool = False):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim not in (3, 4):
            raise ValueError(f"{name} must have shape (batch, [heads,] tokens, dim), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    gqa_heads = q.ndim == k.ndim == 4 and q.shape[0] == k.shape[0] and q.shape[1] != k.shape[1]
    if not (q.ndim == k.ndim == v.ndim) or k.shape[:-1] != v.shape[:-1] or (
            q.shape[:-2] != k.shape[:-2] and not (enable_gqa and gqa_heads)):
        raise ValueError(f"incompatible shapes q={tuple(q.shape)} k={tuple(k.shape)} v={tuple(v.shape)}"
                         + (" (fewer key/value heads than query heads: pass enable_gqa=True)" if gqa_heads else ""))
    if enable_gqa and q.ndim == 4 and q.shape[-3] % k.shape[-3]:
        raise ValueError(f"enable_gqa: the query heads ({q.shape[-3]}) must be a multiple of the key/value heads "
                         f"({k.shape[-3]})")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the head dim, got {q.shape[-1]} and {k.shape[-1]}")
    if q.numel() == 0 or k.numel() == 0 or v.numel() == 0:
        raise ValueError(f"q, k, v must be non-empty, got shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if N is not None and (q.shape[-2] != N or k.shape[-2] != N):
        raise ValueError(f"the token count must equal frames*height*width={N} of layout, "
                         f"got q: {q.shape[-2]}, k: {k.shape[-2]}")


def _iterate(Qc, Kb, Vb, allowed, num_iters, scale, attend, keep=False):
    """Alternating maximisation. Qc (B,G,C,S,d); Kb, Vb (B,m,b,d); allowed (G,m).

    Every round is two calls of the ``attend`` primitive (R-step, then L-step), plus one transposed
    call from the second round on (the R-step's aggregated queries); the kernel runs all of them.
    Returns the output in class layout (B,G,C,S,e) and, with ``keep``, the factors and objectives.
    """
    B, G, C, S, d = Qc.shape
    m, b, e = Kb.shape[1], Kb.shape[2], Vb.shape[-1]
    mask = torch.zeros(G, m, dtype=Qc.dtype, device=Qc.device).masked_fill(~allowed, float("-inf"))
    KV = torch.cat([Kb, Vb], -1).reshape(B * m, b, d + e)
    flat = lambda x: rearrange(x, "b g c n d -> (b g c) n d")  # noqa: E731
    Qf = flat(Qc)
    Kt = lse = None  # set by the first round
    history = []
    for it in range(num_iters):
        # aggregated queries Q̃[k, c] = Σ_s L[s,k] Q_s / Σ_s L[s,k]
        if it == 0:  # L uniform over the allowed blocks: the class mean (any value where L = 0)
            Qt = Qc.mean(-2, keepdim=True).expand(B, G, C, m, d)
        else:  # = softmax_s(scale · K̃_k · Q_s − lse_s) Q_s: the primitive with the roles swapped
            qt, _, _ = attend(flat(Kt), Qf, Qf, -lse, scale)
            Qt = rearrange(qt, "(b g c) m d -> b g c m d", b=B, g=G)
        # R-step: one aggregated query per (block, class)
        qr = rearrange(Qt, "b g c m d -> (b m) (g c) d")
        o, ent, _ = attend(qr, KV[..., :d], KV, None, scale)
        o = rearrange(o, "(b m) (g c) e -> b g c m e", b=B, g=G)
        Kt, Vt = o[..., :d], o[..., d:]
        HR = rearrange(ent, "(b m) (g c) -> b g c m", b=B, g=G)
        bias = HR + mask[None, :, None, :]
        # L-step: every query against the block summaries (output, and lse for the next round)
        out, _, lse = attend(Qf, flat(Kt), flat(Vt), rearrange(bias, "b g c m -> (b g c) m"), scale)
        if keep:
            logits = scale * torch.einsum("bgcsd,bgcmd->bgcsm", Qc, Kt) + bias[..., None, :]
            L = torch.softmax(logits, -1)
            R = torch.softmax(scale * torch.einsum("bgcmd,bmid->bgcmi", Qt, Kb), -1)
            ent_L = torch.special.entr(L).sum(-1)  # H(L_q)
            obj = (L * (scale * torch.einsum("bgcsd,bgcmd->bgcsm", Qc, Kt) + HR[..., None, :]))
            obj = obj.sum((-1, -2, -3, -4)) + ent_L.sum((-1, -2, -3))
            history.append(obj)
    out = rearrange(out, "(b g c) s d -> b g c s d", b=B, g=G)
    if keep:
        return out, dict(L=L, R=R, objective=torch.stack(history, -1))
    return out, None


def _flatten(q, k, v):
    lead = q.shape[:-2]
    f = lambda t: t.reshape(-1, *t.shape[-2:])  # noqa: E731
    return lead, f(q), f(k), f(v)


def monarch_attention(q, k, v, layout, num_iters: int = 1, causal_frames: bool = False, *, block=None,
                      h_reduce: int = 1, w_reduce: int = 1, f_tied: bool = True, chunk_frames: int | None = None,
                      scale: float | None = None, backend: str = "auto", enable_gqa: bool = False):
    """Monarch attention with SDPA shapes: q, k (..., N, d), v (..., N, e) → (..., N, e).

    Args:
        q, k, v: tensors shaped like ``F.scaled_dot_product_attention`` inputs, tokens in
            (frames, height, width) row-major order.
        layout: ``(F, H, W)`` with ``F·H·W = N``.
        num_iters: rounds of alternating maximisation (≥ 1).
        causal_frames: block-causal frame chunks of ``chunk_frames`` frames (default ``block[0]``).
        block: key-block tile ``(bf, bh, bw)``; default one frame ``(1, H, W)``.
        h_reduce, w_reduce, f_tied: tiled-Monarch knobs (module docstring).
        scale: logit scale, default ``1/sqrt(d)``.
        backend: ``"auto"`` (the paperworks dispatcher: Triton where it runs), ``"torch"`` (reference).
        enable_gqa: grouped-query attention as in ``F.scaled_dot_product_attention``: ``k``/``v`` may
            have fewer heads (dim −3) than ``q``, each serving ``q_heads / kv_heads`` consecutive query heads.

    Example:
        >>> q = k = v = torch.randn(1, 2, 4 * 8 * 8, 16)
        >>> monarch_attention(q, k, v, layout=(4, 8, 8)).shape
        torch.Size([1, 2, 256, 16])
    """
    plan = make_plan(layout, block=block, h_reduce=h_reduce, w_reduce=w_reduce, f_tied=f_tied,
                     causal_frames=causal_frames, chunk_frames=chunk_frames)
    num_iters, enable_gqa = _check_call(num_iters, backend, scale, enable_gqa)
    _check_qkv(q, k, v, plan.N, enable_gqa)
    if enable_gqa and q.ndim == 4 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    attend = block_attention if backend == "auto" else block_attention_ref
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    lead, q, k, v = _flatten(q, k, v)
    out, _ = _iterate(plan.queries(q), plan.keys(k), plan.keys(v), plan.allowed(q.device), num_iters, scale, attend)
    return plan.unqueries(out).reshape(*lead, plan.N, v.shape[-1])


def monarch_factors(q, k, v, layout, num_iters: int = 1, causal_frames: bool = False, **knobs):
    """The factors, the materialised map and the objective after each round (reference path, small N).

    Returns a dict with ``L`` (B,G,C,S,m), ``R`` (B,G,C,m,b), ``objective`` (B, num_iters),
    ``A`` (B, N, N) in layout order (rows = queries), ``out`` (B, N, e) and the ``plan``.
    """
    scale = knobs.pop("scale", None)
    plan = make_plan(layout, causal_frames=causal_frames, **knobs)
    _check_qkv(q, k, v, plan.N)
    _as_int("num_iters", num_iters)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    lead, q, k, v = _flatten(q, k, v)
    out, fac = _iterate(plan.queries(q), plan.keys(k), plan.keys(v), plan.allowed(q.device), num_iters, scale,
                        block_attention_ref, keep=True)
    L, R = fac["L"], fac["R"]
    # A[q, key] = L[q, block(key)] * R[block(key), class(q), pos(key)]
    Lq = plan.unqueries(L)  # (B, N, m) in layout order
    cls, blk, pos = plan.token_class(), plan.token_block(), plan.token_in_block()
    Rf = rearrange(R, "b g c m i -> b (g c) m i")
    A = Lq[:, :, blk] * Rf[:, cls][:, :, blk, pos]
    return dict(L=L, R=R, objective=fac["objective"], A=A, out=plan.unqueries(out), plan=plan)


def monarch_flops(plan: MonarchPlan, d: int, e: int | None = None, num_iters: int = 1) -> float:
    """Multiply–add FLOPs (×2) of one head of :func:`monarch_attention` as implemented."""
    e = d if e is None else e
    N, m, b, GC = plan.N, plan.m, plan.b, plan.G * plan.C
    per_iter = 2 * N * m * d + 2 * GC * m * b * d + 2 * GC * m * b * (d + e) + 2 * N * m * d
    return float(num_iters * per_iter + 2 * N * m * e)


def dense_flops(N: int, d: int, e: int | None = None) -> float:
    """FLOPs of dense attention for one head: QKᵀ and AV."""
    return float(2 * N * N * d + 2 * N * N * (d if e is None else e))


class MonarchAttention(nn.Module):
    """Drop-in attention op: ``MonarchAttention(layout=(F, H, W), ...)(q, k, v)`` (SDPA shapes).

    Holds no parameters; it fixes the layout and knobs of :func:`monarch_attention`.
    """

    def __init__(self, layout, *, num_iters: int = 1, causal_frames: bool = False, **knobs):
        super().__init__()
        # every knob is checked here, not at the first call
        unknown = set(knobs) - {"block", "h_reduce", "w_reduce", "f_tied", "chunk_frames", "scale", "backend",
                                "enable_gqa"}
        if unknown:
            raise TypeError(f"MonarchAttention got unknown knobs {sorted(unknown)}")
        self.plan = make_plan(layout, causal_frames=causal_frames, **{k: v for k, v in knobs.items()
                                                                      if k not in ("scale", "backend", "enable_gqa")})
        num_iters, _ = _check_call(num_iters, knobs.get("backend", "auto"), knobs.get("scale"),
                                   knobs.get("enable_gqa", False))
        self.layout = tuple(int(x) for x in layout)
        self.num_iters, self.causal_frames, self.knobs = num_iters, bool(causal_frames), knobs

    def forward(self, q, k, v):
        return monarch_attention(q, k, v, self.layout, self.num_iters, self.causal_frames, **self.knobs)

    def sparsity(self, d: int) -> float:
        """1 − FLOPs(Monarch)/FLOPs(dense): the FLOP-ratio notion of sparsity, not a mask density."""
        return 1.0 - monarch_flops(self.plan, d, num_iters=self.num_iters) / dense_flops(self.plan.N, d)

    def extra_repr(self) -> str:
        return f"layout={self.layout}, num_iters={self.num_iters}, causal_frames={self.causal_frames}, {self.knobs}"


def monarch_chunk_attention(q, k, v, frame_shape, *, chunk_frames: int = 1, num_iters: int = 1, **knobs):
    """The last chunk's rows of block-causal Monarch attention, from its queries and all keys so far.

    ``q`` holds the ``chunk_frames`` frames of one chunk, ``k``/``v`` every frame up to and including
    that chunk (SDPA shapes, layout order). The result equals the chunk's rows of
    ``monarch_attention(..., causal_frames=True, chunk_frames=chunk_frames)`` over the whole video,
    because classes never mix chunks and a chunk sees every block of its own and earlier chunks.
    """
    H, W = (_as_int(f"frame_shape[{i}]", x) for i, x in enumerate(frame_shape))
    cf = _as_int("chunk_frames", chunk_frames)
    _check_qkv(q, k, v)
    if q.shape[-2] != cf * H * W or k.shape[-2] % (cf * H * W):
        raise ValueError(f"q must hold one chunk ({cf}x{H}x{W}={cf * H * W} tokens) and k whole chunks, "
                         f"got {q.shape[-2]} and {k.shape[-2]}")
    _as_int("num_iters", num_iters)
    knobs = dict(knobs)
    scale = knobs.pop("scale", None)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    backend = knobs.pop("backend", "auto")
    if backend not in ("auto", "torch"):
        raise ValueError(f"backend must be 'auto' or 'torch', got {backend!r}")
    attend = block_attention if backend == "auto" else block_attention_ref
    qplan = make_plan((cf, H, W), causal_frames=True, chunk_frames=cf, **knobs)
    kplan = make_plan((k.shape[-2] // (H * W), H, W), causal_frames=True, chunk_frames=cf, **knobs)
    lead, qf, kf, vf = _flatten(q, k, v)
    allowed = torch.ones(qplan.G, kplan.m, dtype=torch.bool, device=q.device)
    out, _ = _iterate(qplan.queries(qf), kplan.keys(kf), kplan.keys(vf), allowed, num_iters, scale, attend)
    return qplan.unqueries(out).reshape(*lead, qplan.N, v.shape[-1])


class MonarchKVCache:
    """Autoregressive chunk-by-chunk Monarch attention with a key/value cache.

    ``step(q, k, v)`` takes one chunk of ``chunk_frames`` frames (SDPA shapes, tokens of the chunk in
    layout order), appends its keys/values to the cache and returns the chunk's output — equal to
    the corresponding rows of ``monarch_attention(..., causal_frames=True)`` over the whole video.
    ``step(..., commit=False)`` attends without storing (the denoising steps of one chunk).
    """

    def __init__(self, frame_shape, *, chunk_frames: int = 1, num_iters: int = 1, **knobs):
        self.H, self.W = (_as_int(f"frame_shape[{i}]", x) for i, x in enumerate(frame_shape))
        self.chunk_frames, self.num_iters, self.knobs = _as_int("chunk_frames", chunk_frames), num_iters, knobs
        self.k = self.v = None

    @property
    def frames(self) -> int:
        return 0 if self.k is None else self.k.shape[-2] // (self.H * self.W)

    def step(self, q, k, v, *, commit: bool = True):
        _check_qkv(q, k, v, self.chunk_frames * self.H * self.W)
        ks = k if self.k is None else torch.cat([self.k, k], -2)
        vs = v if self.v is None else torch.cat([self.v, v], -2)
        if commit:
            self.k, self.v = ks, vs
        return monarch_chunk_attention(q, ks, vs, (self.H, self.W), chunk_frames=self.chunk_frames,
                                       num_iters=self.num_iters, **self.knobs)
