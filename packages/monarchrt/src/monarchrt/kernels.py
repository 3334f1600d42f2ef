"""The attention primitive both Monarch steps are made of, as a torch reference and a Triton kernel.

Every step of Monarch attention is a small, batched softmax attention with an additive key bias
that also reports the row entropy:

    s = scale · q kᵀ + bias,   p = softmax(s),   o = p v,   H = −Σ_j p_j log p_j,   lse = log Σ_j e^{s_j}

* R-step: for each key block, the aggregated queries of all classes against the block's ``b`` keys
  (values = [K | V]); its entropy enters the L-step logits.
* L-step: the queries of one class against the ``m`` block summaries K̃ (bias = H(R) + causal mask).
* For ``num_iters > 1``, the next R-step's aggregated queries Q̃[k] = Σ_q L[q,k] Q_q / Σ_q L[q,k] are
  the same primitive transposed: block summaries as queries, the class's queries as keys and values,
  key bias −lse_q (the L-step's log-normalisers; the block's own bias cancels in the ratio).

``block_attention`` dispatches through :func:`paperworks.dispatch`: the Triton kernels when triton is
importable and the tensors are on CUDA (or ``TRITON_INTERPRET=1``), :func:`block_attention_ref`
otherwise. Triton is imported lazily, inside the kernel factory, so the package imports without it.
The kernels are tiled FlashAttention-style (online softmax over key tiles; see
:mod:`monarchrt._triton_kernels`): a program's tiles take at most :data:`TILE_BUDGET` bytes whatever
the number of keys or queries (:func:`tile_bytes`, :func:`fitting_configs`); bf16/fp16 inputs go
through ``tl.dot`` with fp32 accumulation, fp32 inputs in IEEE precision. On a GPU each kernel is
autotuned over the configurations that fit (:func:`autotune_configs`); in the interpreter the
smallest one runs, so that small test shapes already span several tiles.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

import torch

from paperworks import dispatch


def _check(q, k, v, bias):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.ndim != 3:
            raise ValueError(f"{name} must be a 3-D tensor (batch, rows, dim)")
    if k.shape[:2] != v.shape[:2] or q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2]:
        raise ValueError(f"incompatible shapes q={tuple(q.shape)} k={tuple(k.shape)} v={tuple(v.shape)}")
    if bias is not None and bias.shape != k.shape[:2]:
        raise ValueError(f"bias must have shape {tuple(k.shape[:2])}, got {tuple(bias.shape)}")


def _ref_chunk(q, k, v, bias, scale):
    s = torch.baddbmm(bias[:, None, :].expand(-1, q.shape[1], -1), q, k.transpose(-1, -2), alpha=scale) \
        if bias is not None else torch.bmm(q, k.transpose(-1, -2)).mul_(scale)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v) + ((bias,) if bias is not None else ()))):
        # inference: shift in place, one exp, normalise in place (H is shift-invariant: H = lse' - <p, s'>)
        mx = s.amax(-1, keepdim=True)
        s.sub_(mx)
        p = torch.exp(s)
        z = p.sum(-1, keepdim=True)
        p.div_(z)
        if bias is not None:
            s.nan_to_num_(neginf=0.0)
        logz = z.squeeze(-1).log_()
        return p @ v, logz - (p * s).sum(-1), logz + mx.squeeze(-1)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None])
    if bias is not None:
        s = torch.where(torch.isfinite(s), s, torch.zeros((), dtype=s.dtype, device=s.device))
    ent = lse - (p * s).sum(-1)
    return p @ v, ent, lse


def block_attention_ref(q, k, v, bias=None, scale: float = 1.0, *, max_scores: int = 1 << 22):
    """Plain-torch reference. q (B, M, D), k (B, N, D), v (B, N, E), bias (B, N) or None.

    Returns ``(o, ent, lse)``: o (B, M, E), the row entropies ent (B, M) and the row log-normalisers
    lse (B, M). The batch is processed in slices of at most ``max_scores`` logits so that large calls
    stay in reused memory.
    """
    _check(q, k, v, bias)
    step = max(1, max_scores // max(1, q.shape[1] * k.shape[1]))
    if step >= q.shape[0]:
        return _ref_chunk(q, k, v, bias, scale)
    outs = [_ref_chunk(q[i:i + step], k[i:i + step], v[i:i + step], None if bias is None else bias[i:i + step], scale)
            for i in range(0, q.shape[0], step)]
    return tuple(torch.cat(parts) for parts in zip(*outs))


# ---------------------------------------------------------------- Triton

TILE_BUDGET = 100 * 1024
"""Bytes of tiles one program may hold (inputs in their dtype, fp32 scores and accumulators)."""

KERNELS = ("fwd", "bwd_dq", "bwd_dkdv")


@dataclass(frozen=True)
class TileConfig:
    """One launch configuration: ``BM`` query rows and ``BN`` key rows per tile."""

    BM: int
    BN: int
    num_warps: int = 4
    num_stages: int = 2


_CONFIGS = (TileConfig(16, 16, 2, 2), TileConfig(16, 32, 2, 2), TileConfig(32, 16, 2, 2), TileConfig(32, 32, 4, 2),
            TileConfig(64, 32, 4, 2), TileConfig(32, 64, 4, 2), TileConfig(64, 64, 4, 3), TileConfig(128, 32, 8, 2),
            TileConfig(128, 64, 8, 3))


def autotune_configs() -> tuple[TileConfig, ...]:
    """The configurations the GPU kernels are autotuned over (those that fit are kept per call)."""
    return _CONFIGS


def tile_bytes(kernel: str, BM: int, BN: int, BD: int, BE: int, itemsize: int) -> int:
    """Bytes of the tiles one program of ``kernel`` holds at once (an upper estimate).

    ``BD``/``BE``: the padded head and value widths; ``itemsize``: bytes per input element. Inputs are
    held in their dtype; scores, probabilities, gradients of the scores and accumulators in fp32.
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    f32 = 4
    if kernel == "fwd":   # q, k, v tiles; s, p; the output accumulator; m, l, t
        return itemsize * (BM * BD + BN * BD + BN * BE) + f32 * (2 * BM * BN + BM * BE + 3 * BM)
    if kernel == "bwd_dq":  # q, do, k, v tiles; s, p, g, ds; the dq accumulator; lse, dent, c
        return itemsize * (BM * BD + BM * BE + BN * BD + BN * BE) + f32 * (4 * BM * BN + BM * BD + 3 * BM)
    # bwd_dkdv: k, v, q, do tiles; s, p, g, ds; the dk, dv, dbias accumulators; lse, dent, c
    return itemsize * (BN * BD + BN * BE + BM * BD + BM * BE) + f32 * (4 * BM * BN + BN * BD + BN * BE + BN + 3 * BM)


def fitting_configs(kernel: str, BD: int, BE: int, itemsize: int, budget: int = TILE_BUDGET) -> list[TileConfig]:
    """The autotune configurations whose tiles fit ``budget``, smallest first; never empty (when none
    fits, the smallest configuration)."""
    by_size = sorted(_CONFIGS, key=lambda c: tile_bytes(kernel, c.BM, c.BN, BD, BE, itemsize))
    fit = [c for c in by_size if tile_bytes(kernel, c.BM, c.BN, BD, BE, itemsize) <= budget]
    return fit or by_size[:1]


def prune_configs(kernel: str):
    """Triton's ``early_config_prune`` for ``kernel``: keep the configurations that fit the tile budget."""

    def prune(configs, named_args, **kwargs):
        args = {**named_args, **kwargs}
        BD, BE, itemsize = int(args["BD"]), int(args["BE"]), args["q_ptr"].element_size()
        keep = {(c.BM, c.BN) for c in fitting_configs(kernel, BD, BE, itemsize)}
        return [c for c in configs if (c.kwargs["BM"], c.kwargs["BN"]) in keep] or list(configs[:1])

    return prune


def _p2(n: int) -> int:
    return max(16, 1 << (int(n) - 1).bit_length())


def _kernels(interpret: str):
    """The kernel module, (re)loaded so that its @triton.jit matches the current TRITON_INTERPRET."""
    mod = importlib.import_module("monarchrt._triton_kernels")
    if mod.INTERPRET != interpret:
        mod = importlib.reload(mod)
    return mod


def _launch(name: str, B: int, rows: int, by: str, args: tuple, meta: dict, itemsize: int) -> None:
    """Run kernel ``name`` on a grid of (B, tiles of ``rows`` along ``by`` = "BM" or "BN")."""
    interpret = os.environ.get("TRITON_INTERPRET", "")
    mod = _kernels(interpret)
    cdiv = mod.triton.cdiv
    if interpret:  # no autotuning in the interpreter: the smallest fitting tiles
        c = fitting_configs(name, meta["BD"], meta["BE"], itemsize)[0]
        tiles = {"BM": c.BM, "BN": c.BN}
        getattr(mod, name)[(B, cdiv(rows, tiles[by]))](*args, **meta, **tiles)
    else:
        getattr(mod, f"{name}_tuned")[lambda META: (B, cdiv(rows, META[by]))](*args, **meta)


_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


class _BlockAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, scale):
        dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
        work = dtype if dtype in _DTYPES else torch.float32
        q, k, v = (t.to(work).contiguous() for t in (q, k, v))
        b = bias.float().contiguous() if bias is not None else q
        Bt, M, N, D, E = q.shape[0], q.shape[1], k.shape[1], q.shape[2], v.shape[2]
        meta = dict(HAS_BIAS=bias is not None, IEEE=work == torch.float32, BD=_p2(D), BE=_p2(E))
        o = torch.empty(Bt, M, E, device=q.device, dtype=work)
        ent = torch.empty(Bt, M, device=q.device, dtype=torch.float32)
        lse = torch.empty_like(ent)
        _launch("fwd", Bt, M, "BM", (q, k, v, b, o, ent, lse, M, N, D, E, float(scale)), meta, q.element_size())
        ctx.save_for_backward(q, k, v, b, o, lse, ent)
        ctx.meta, ctx.scale, ctx.dtype, ctx.has_bias = meta, float(scale), dtype, bias is not None
        return o.to(dtype), ent.to(dtype), lse.to(dtype, copy=True)

    @staticmethod
    def backward(ctx, do, dent, dlse):
        q, k, v, b, o, lse, ent = ctx.saved_tensors
        Bt, M, N, D, E = q.shape[0], q.shape[1], k.shape[1], q.shape[2], v.shape[2]
        do = torch.zeros_like(o) if do is None else do.to(o.dtype).contiguous()
        dent = torch.zeros_like(lse) if dent is None else dent.float().contiguous()
        dlse = torch.zeros_like(lse) if dlse is None else dlse.float().contiguous()
        # ds_j = p_j (do·v_j - dent s_j - c), c = do·o + dent (H - lse) - dlse (one number per row)
        c = ((do.float() * o.float()).sum(-1) + dent * (ent - lse) - dlse).contiguous()
        dq = torch.empty(q.shape, device=q.device, dtype=torch.float32)
        dk = torch.empty(k.shape, device=q.device, dtype=torch.float32)
        dv = torch.empty(v.shape, device=q.device, dtype=torch.float32)
        db = torch.empty(Bt, N, device=q.device, dtype=torch.float32)
        n = q.element_size()
        _launch("bwd_dq", Bt, M, "BM", (q, k, v, b, lse, do, dent, c, dq, M, N, D, E, ctx.scale), ctx.meta, n)
        _launch("bwd_dkdv", Bt, N, "BN", (q, k, v, b, lse, do, dent, c, dk, dv, db, M, N, D, E, ctx.scale),
                ctx.meta, n)
        t = ctx.dtype
        return dq.to(t), dk.to(t), dv.to(t), (db if ctx.has_bias else None), None  # the bias came in fp32


@dispatch(reference=block_attention_ref)
def block_attention(q, k, v, bias=None, scale: float = 1.0):
    """Batched softmax attention with a key bias, row entropies and log-normalisers (tiled Triton
    forward and backward, differentiable in all three outputs).

    Shapes and outputs as :func:`block_attention_ref`; bf16/fp16/fp32 inputs (others computed in fp32),
    fp32 accumulation. Rows whose bias is ``-inf`` everywhere are not allowed.
    """
    _check(q, k, v, bias)
    if bias is not None:
        # -inf bias entries make exp underflow to exactly 0, as in the reference; clamp for the kernel's sums
        # (in fp32, as the kernels read it: -1e30 overflows fp16)
        bias = torch.clamp(bias.float(), min=-1e30)
    return _BlockAttention.apply(q, k, v, bias, scale)
