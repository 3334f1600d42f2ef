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

``block_attention`` dispatches through :func:`paperworks.dispatch`: the Triton kernel when triton is
importable and CUDA is present (or ``TRITON_INTERPRET=1``), :func:`block_attention_ref` otherwise.
Triton is imported lazily, inside the kernel factory, so the package imports without it.
The kernel keeps all keys of one batch item in one tile, which suits Monarch's short block rows
(``b`` and ``m`` up to ~1k); it is written for clarity and correctness, not peak speed.
"""

from __future__ import annotations

import importlib
import os

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


def _p2(n: int) -> int:
    return max(16, 1 << (int(n) - 1).bit_length())


def _kernels(interpret: str):
    """The kernel module, (re)loaded so that its @triton.jit matches the current TRITON_INTERPRET."""
    mod = importlib.import_module("monarchrt._triton_kernels")
    if mod.INTERPRET != interpret:
        mod = importlib.reload(mod)
    return mod.triton, mod.fwd, mod.bwd


def _launch_cfg(q, k, v):
    M, N, D, E = q.shape[1], k.shape[1], q.shape[2], v.shape[2]
    return M, N, D, E, dict(BM=16 if M <= 16 else 32, BN=_p2(N), BD=_p2(D), BE=_p2(E))


class _BlockAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, scale):
        triton, fwd, _ = _kernels(os.environ.get("TRITON_INTERPRET", ""))
        dtype = q.dtype
        q, k, v = (t.float().contiguous() for t in (q, k, v))
        b = bias.float().contiguous() if bias is not None else q
        M, N, D, E, cfg = _launch_cfg(q, k, v)
        Bt = q.shape[0]
        o = torch.empty(Bt, M, E, device=q.device, dtype=torch.float32)
        ent = torch.empty(Bt, M, device=q.device, dtype=torch.float32)
        lse = torch.empty_like(ent)
        fwd[(Bt, triton.cdiv(M, cfg["BM"]))](q, k, v, b, o, ent, lse, M, N, D, E, float(scale),
                                              HAS_BIAS=bias is not None, **cfg)
        ctx.save_for_backward(q, k, v, b, lse, ent)
        ctx.has_bias, ctx.scale, ctx.dtype = bias is not None, float(scale), dtype
        return o.to(dtype), ent.to(dtype), lse.to(dtype, copy=True)

    @staticmethod
    def backward(ctx, do, dent, dlse):
        triton, _, bwd = _kernels(os.environ.get("TRITON_INTERPRET", ""))
        q, k, v, b, lse, ent = ctx.saved_tensors
        do = torch.zeros_like(q[..., :1].expand(-1, -1, v.shape[2])) if do is None else do.float().contiguous()
        dent = torch.zeros_like(lse) if dent is None else dent.float().contiguous()
        dlse = torch.zeros_like(lse) if dlse is None else dlse.float().contiguous()
        M, N, D, E, cfg = _launch_cfg(q, k, v)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        db = torch.empty(k.shape[0], N, device=q.device, dtype=torch.float32)
        bwd[(q.shape[0],)](q, k, v, b, lse, ent, do, dent, dlse, dq, dk, dv, db, M, N, D, E, ctx.scale,
                           HAS_BIAS=ctx.has_bias, **cfg)
        t = ctx.dtype
        return dq.to(t), dk.to(t), dv.to(t), (db.to(t) if ctx.has_bias else None), None


@dispatch(reference=block_attention_ref)
def block_attention(q, k, v, bias=None, scale: float = 1.0):
    """Batched softmax attention with a key bias, row entropies and log-normalisers (Triton forward
    and backward, differentiable in all three outputs).

    Shapes and outputs as :func:`block_attention_ref`. Rows whose bias is ``-inf`` everywhere are not allowed.
    """
    _check(q, k, v, bias)
    if bias is not None:
        # -inf bias entries make exp underflow to exactly 0, as in the reference; clamp for the kernel's sums
        bias = torch.clamp(bias, min=-1e30)
    return _BlockAttention.apply(q, k, v, bias, scale)
