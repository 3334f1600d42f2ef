"""The Triton kernels of :mod:`monarchrt.kernels` (imported lazily; needs triton).

``@triton.jit`` decides at decoration time whether a kernel runs in the interpreter
(``TRITON_INTERPRET=1``), so :func:`monarchrt.kernels._kernels` reloads this module when that
setting changes. Reductions use our own combine functions because ``tl.sum``/``tl.max`` were
decorated when triton was first imported and may not match the current mode.
"""

import os

import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET", "")


@triton.jit
def _add(a, b):
    return a + b

@triton.jit
def _maximum(a, b):
    return tl.where(a > b, a, b)

@triton.jit
def _load_kvb(k_ptr, v_ptr, b_ptr, pid_b, N, D, E, rn, rd, re, HAS_BIAS: tl.constexpr):
    """One batch item's keys, values and key bias (-inf on padded keys)."""
    k = tl.load(k_ptr + pid_b * N * D + rn[:, None] * D + rd[None, :],
                mask=(rn[:, None] < N) & (rd[None, :] < D), other=0.0)
    v = tl.load(v_ptr + pid_b * N * E + rn[:, None] * E + re[None, :],
                mask=(rn[:, None] < N) & (re[None, :] < E), other=0.0)
    if HAS_BIAS:
        bias = tl.load(b_ptr + pid_b * N + rn, mask=rn < N, other=float("-inf"))
    else:
        bias = tl.where(rn < N, 0.0, float("-inf"))
    return k, v, bias

@triton.jit
def fwd(q_ptr, k_ptr, v_ptr, b_ptr, o_ptr, ent_ptr, lse_ptr, M, N, D, E, scale,
        HAS_BIAS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, BD)
    re = tl.arange(0, BE)
    q = tl.load(q_ptr + pid_b * M * D + rm[:, None] * D + rd[None, :],
                mask=(rm[:, None] < M) & (rd[None, :] < D), other=0.0)
    k, v, bias = _load_kvb(k_ptr, v_ptr, b_ptr, pid_b, N, D, E, rn, rd, re, HAS_BIAS)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale + bias[None, :]
    mx = tl.reduce(s, 1, _maximum)
    p = tl.exp(s - mx[:, None])
    den = tl.reduce(p, 1, _add)
    p = p / den[:, None]
    lse = mx + tl.log(den)
    ps = p * tl.where(p > 0, s, 0.0)
    ent = lse - tl.reduce(ps, 1, _add)
    o = tl.dot(p, v, input_precision="ieee")
    tl.store(o_ptr + pid_b * M * E + rm[:, None] * E + re[None, :], o,
             mask=(rm[:, None] < M) & (re[None, :] < E))
    tl.store(ent_ptr + pid_b * M + rm, ent, mask=rm < M)
    tl.store(lse_ptr + pid_b * M + rm, lse, mask=rm < M)

@triton.jit
def bwd(q_ptr, k_ptr, v_ptr, b_ptr, lse_ptr, ent_ptr, do_ptr, dent_ptr, dlse_ptr,
        dq_ptr, dk_ptr, dv_ptr, db_ptr, M, N, D, E, scale,
        HAS_BIAS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr):
    pid_b = tl.program_id(0)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, BD)
    re = tl.arange(0, BE)
    k, v, bias = _load_kvb(k_ptr, v_ptr, b_ptr, pid_b, N, D, E, rn, rd, re, HAS_BIAS)
    dk = tl.full((BN, BD), 0.0, tl.float32)
    dv = tl.full((BN, BE), 0.0, tl.float32)
    db = tl.full((BN,), 0.0, tl.float32)
    for start in range(0, M, BM):
        rm = start + tl.arange(0, BM)
        mrow = rm < M
        q = tl.load(q_ptr + pid_b * M * D + rm[:, None] * D + rd[None, :],
                    mask=mrow[:, None] & (rd[None, :] < D), other=0.0)
        do = tl.load(do_ptr + pid_b * M * E + rm[:, None] * E + re[None, :],
                     mask=mrow[:, None] & (re[None, :] < E), other=0.0)
        lse = tl.load(lse_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        ent = tl.load(ent_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        dent = tl.load(dent_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        dlse = tl.load(dlse_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale + bias[None, :]
        p = tl.where(mrow[:, None], tl.exp(s - lse[:, None]), 0.0)
        logp = tl.where(p > 0, s - lse[:, None], 0.0)
        g = tl.dot(do, tl.trans(v), input_precision="ieee")
        ds = p * (g - tl.reduce(p * g, 1, _add)[:, None]) - dent[:, None] * p * (logp + ent[:, None]) \
            + dlse[:, None] * p
        dq = tl.dot(ds, k, input_precision="ieee") * scale
        tl.store(dq_ptr + pid_b * M * D + rm[:, None] * D + rd[None, :], dq,
                 mask=mrow[:, None] & (rd[None, :] < D))
        dk += tl.dot(tl.trans(ds), q, input_precision="ieee") * scale
        dv += tl.dot(tl.trans(p), do, input_precision="ieee")
        db += tl.reduce(ds, 0, _add)
    tl.store(dk_ptr + pid_b * N * D + rn[:, None] * D + rd[None, :], dk,
             mask=(rn[:, None] < N) & (rd[None, :] < D))
    tl.store(dv_ptr + pid_b * N * E + rn[:, None] * E + re[None, :], dv,
             mask=(rn[:, None] < N) & (re[None, :] < E))
    tl.store(db_ptr + pid_b * N + rn, db, mask=rn < N)

