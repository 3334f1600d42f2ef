"""The Triton kernels of :mod:`monarchrt.kernels` (imported lazily; needs triton).

FlashAttention-style: every program holds one tile of ``BM`` query rows (or, in ``bwd_dkdv``, ``BN``
key rows) and streams the other side through in tiles, so its memory does not depend on the number
of keys or queries. The forward keeps a running row maximum ``m``, the running sum ``l = Σ e^{s-m}``,
the running ``t = Σ e^{s-m} (s - m)`` (for the entropy, relative to the maximum so that no large
numbers cancel) and the running output; at the end ``lse = m + log l`` and ``H = log l - t / l``.
The backward recomputes the probabilities from the saved ``lse`` (two kernels: ``dq`` over key
tiles, ``dk``/``dv``/``dbias`` over query tiles), with the row constant ``c`` computed outside.

Dots take the inputs' dtype and accumulate in fp32 (``tl.dot``: tensor cores for bf16/fp16);
fp32 inputs use ``input_precision="ieee"`` (exact against the torch reference; no tensor cores).

``@triton.jit`` decides at decoration time whether a kernel runs in the interpreter
(``TRITON_INTERPRET=1``), so :func:`monarchrt.kernels._kernels` reloads this module when that
setting changes. Reductions use our own combine functions because ``tl.sum``/``tl.max`` were
decorated when triton was first imported and may not match the current mode. The autotuned
wrappers (``*_tuned``) exist only outside the interpreter (autotuning times on a GPU).
"""

import os

import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET", "")
# the interpreter's tl.dot mishandles bf16 operands (numpy has no bf16): there, and only there, they are upcast
_UPCAST_BF16 = tl.constexpr(bool(INTERPRET))


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _maximum(a, b):
    return tl.where(a > b, a, b)


@triton.jit
def _dot(a, b, IEEE: tl.constexpr):
    if IEEE:
        return tl.dot(a, b, input_precision="ieee")
    if _UPCAST_BF16 and a.dtype == tl.bfloat16:
        return tl.dot(a.to(tl.float32), b.to(tl.float32))
    return tl.dot(a, b)


@triton.jit
def _load_rows(ptr, pid_b, R, C, rr, rc):
    return tl.load(ptr + pid_b * R * C + rr[:, None] * C + rc[None, :],
                   mask=(rr[:, None] < R) & (rc[None, :] < C), other=0.0)


@triton.jit
def _key_bias(b_ptr, pid_b, N, rn, HAS_BIAS: tl.constexpr):
    """The key bias of one key tile, -inf on padded keys."""
    if HAS_BIAS:
        return tl.load(b_ptr + pid_b * N + rn, mask=rn < N, other=float("-inf"))
    return tl.where(rn < N, 0.0, float("-inf"))


@triton.jit
def fwd(q_ptr, k_ptr, v_ptr, b_ptr, o_ptr, ent_ptr, lse_ptr, M, N, D, E, scale,
        HAS_BIAS: tl.constexpr, IEEE: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    re = tl.arange(0, BE)
    q = _load_rows(q_ptr, pid_b, M, D, rm, rd)
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.full((BM,), 0.0, tl.float32)
    t_i = tl.full((BM,), 0.0, tl.float32)
    acc = tl.full((BM, BE), 0.0, tl.float32)
    for start in range(0, N, BN):
        rn = start + tl.arange(0, BN)
        k = _load_rows(k_ptr, pid_b, N, D, rn, rd)
        v = _load_rows(v_ptr, pid_b, N, E, rn, re)
        s = _dot(q, tl.trans(k), IEEE) * scale + _key_bias(b_ptr, pid_b, N, rn, HAS_BIAS)[None, :]
        m_new = _maximum(m_i, tl.reduce(s, 1, _maximum))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        # t relative to the new maximum: Σ_old p (s - m_new) = α (t_old + (m_old - m_new) l_old)
        shift = tl.where(l_i > 0, m_i - m_new, 0.0) * l_i
        t_i = alpha * (t_i + shift) + tl.reduce(p * tl.where(p > 0, s - m_new[:, None], 0.0), 1, _add)
        l_i = alpha * l_i + tl.reduce(p, 1, _add)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, IEEE)
        m_i = m_new
    o = acc / l_i[:, None]
    logl = tl.log(l_i)
    tl.store(o_ptr + pid_b * M * E + rm[:, None] * E + re[None, :], o,
             mask=(rm[:, None] < M) & (re[None, :] < E))
    tl.store(ent_ptr + pid_b * M + rm, logl - t_i / l_i, mask=rm < M)
    tl.store(lse_ptr + pid_b * M + rm, m_i + logl, mask=rm < M)


@triton.jit
def _ds(q, k, v, do, bias, lse, dent, c, mrow, scale, IEEE: tl.constexpr):
    """Recomputed probabilities p and the logit gradient ds = p (do·v - dent·s - c) of one tile."""
    s = _dot(q, tl.trans(k), IEEE) * scale + bias[None, :]
    p = tl.where(mrow[:, None], tl.exp(s - lse[:, None]), 0.0)
    g = _dot(do, tl.trans(v), IEEE)
    ds = p * (g - dent[:, None] * tl.where(p > 0, s, 0.0) - c[:, None])
    return p, ds


@triton.jit
def bwd_dq(q_ptr, k_ptr, v_ptr, b_ptr, lse_ptr, do_ptr, dent_ptr, c_ptr, dq_ptr, M, N, D, E, scale,
           HAS_BIAS: tl.constexpr, IEEE: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr,
           BM: tl.constexpr, BN: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    mrow = rm < M
    rd = tl.arange(0, BD)
    re = tl.arange(0, BE)
    q = _load_rows(q_ptr, pid_b, M, D, rm, rd)
    do = _load_rows(do_ptr, pid_b, M, E, rm, re)
    lse = tl.load(lse_ptr + pid_b * M + rm, mask=mrow, other=0.0)
    dent = tl.load(dent_ptr + pid_b * M + rm, mask=mrow, other=0.0)
    c = tl.load(c_ptr + pid_b * M + rm, mask=mrow, other=0.0)
    dq = tl.full((BM, BD), 0.0, tl.float32)
    for start in range(0, N, BN):
        rn = start + tl.arange(0, BN)
        k = _load_rows(k_ptr, pid_b, N, D, rn, rd)
        v = _load_rows(v_ptr, pid_b, N, E, rn, re)
        bias = _key_bias(b_ptr, pid_b, N, rn, HAS_BIAS)
        _, ds = _ds(q, k, v, do, bias, lse, dent, c, mrow, scale, IEEE)
        dq += _dot(ds.to(k.dtype), k, IEEE)
    tl.store(dq_ptr + pid_b * M * D + rm[:, None] * D + rd[None, :], dq * scale,
             mask=mrow[:, None] & (rd[None, :] < D))


@triton.jit
def bwd_dkdv(q_ptr, k_ptr, v_ptr, b_ptr, lse_ptr, do_ptr, dent_ptr, c_ptr, dk_ptr, dv_ptr, db_ptr,
             M, N, D, E, scale,
             HAS_BIAS: tl.constexpr, IEEE: tl.constexpr, BD: tl.constexpr, BE: tl.constexpr,
             BM: tl.constexpr, BN: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)
    rn = pid_n * BN + tl.arange(0, BN)
    rd = tl.arange(0, BD)
    re = tl.arange(0, BE)
    k = _load_rows(k_ptr, pid_b, N, D, rn, rd)
    v = _load_rows(v_ptr, pid_b, N, E, rn, re)
    bias = _key_bias(b_ptr, pid_b, N, rn, HAS_BIAS)
    dk = tl.full((BN, BD), 0.0, tl.float32)
    dv = tl.full((BN, BE), 0.0, tl.float32)
    db = tl.full((BN,), 0.0, tl.float32)
    for start in range(0, M, BM):
        rm = start + tl.arange(0, BM)
        mrow = rm < M
        q = _load_rows(q_ptr, pid_b, M, D, rm, rd)
        do = _load_rows(do_ptr, pid_b, M, E, rm, re)
        lse = tl.load(lse_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        dent = tl.load(dent_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        c = tl.load(c_ptr + pid_b * M + rm, mask=mrow, other=0.0)
        p, ds = _ds(q, k, v, do, bias, lse, dent, c, mrow, scale, IEEE)
        dv += _dot(tl.trans(p).to(do.dtype), do, IEEE)
        dk += _dot(tl.trans(ds).to(q.dtype), q, IEEE)
        db += tl.reduce(ds, 0, _add)
    nrow = rn < N
    tl.store(dk_ptr + pid_b * N * D + rn[:, None] * D + rd[None, :], dk * scale,
             mask=nrow[:, None] & (rd[None, :] < D))
    tl.store(dv_ptr + pid_b * N * E + rn[:, None] * E + re[None, :], dv,
             mask=nrow[:, None] & (re[None, :] < E))
    tl.store(db_ptr + pid_b * N + rn, db, mask=nrow)


def _tuned(kernel, name):
    """``kernel`` autotuned over the configurations of :mod:`monarchrt.kernels` that fit its tile budget."""
    from monarchrt.kernels import autotune_configs, prune_configs

    configs = [triton.Config({"BM": c.BM, "BN": c.BN}, num_warps=c.num_warps, num_stages=c.num_stages)
               for c in autotune_configs()]
    return triton.autotune(configs, key=["M", "N", "BD", "BE", "IEEE"],
                           prune_configs_by={"early_config_prune": prune_configs(name)})(kernel)


if not INTERPRET:
    fwd_tuned = _tuned(fwd, "fwd")
    bwd_dq_tuned = _tuned(bwd_dq, "bwd_dq")
    bwd_dkdv_tuned = _tuned(bwd_dkdv, "bwd_dkdv")
