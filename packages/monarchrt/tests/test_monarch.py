import math

import pytest
import torch
from monarchrt import (
    MonarchAttention,
    MonarchKVCache,
    dense_flops,
    make_plan,
    monarch_attention,
    monarch_factors,
    monarch_flops,
)

LAYOUT = (4, 4, 4)
KNOBS = [
    dict(),
    dict(block=(1, 2, 4)),
    dict(block=(2, 4, 2), h_reduce=2),
    dict(block=(2, 2, 2), f_tied=False),
    dict(block=(1, 4, 4), w_reduce=2, causal_frames=True, chunk_frames=2),
]


def qkv(gen, N=64, d=8, lead=(2,)):
    return [torch.randn(*lead, N, d, generator=gen) for _ in range(3)]


@pytest.mark.parametrize("knobs", KNOBS)
def test_map_is_a_full_support_stochastic_matrix_that_reproduces_the_output(gen, knobs):
    q, k, v = qkv(gen)
    fac = monarch_factors(q, k, v, LAYOUT, num_iters=2, **knobs)
    A = fac["A"]
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 64), atol=1e-5, rtol=0)
    if not knobs.get("causal_frames"):
        assert (A > 0).all(), "the Monarch map must give weight to every key"
    out = monarch_attention(q, k, v, LAYOUT, num_iters=2, backend="torch", **knobs)
    torch.testing.assert_close(A @ v, out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("knobs", KNOBS[:4])
def test_map_equals_the_product_of_its_block_diagonal_factors(gen, knobs):
    q, k, v = qkv(gen, lead=(1,))
    fac = monarch_factors(q, k, v, LAYOUT, num_iters=1, **knobs)
    plan, L, R = fac["plan"], fac["L"][0], fac["R"][0]  # L (G,C,S,m), R (G,C,m,b)
    G, C, S, m = L.shape
    b = R.shape[-1]
    Lhat = torch.block_diag(*L.reshape(G * C, S, m))  # rows (class, member), cols (class, block)
    Rhat = torch.block_diag(*R.reshape(G * C, m, b).transpose(0, 1))  # rows (block, class), cols (block, pos)
    P = torch.zeros(G * C * m, m * G * C)  # (class, block) -> (block, class)
    for c in range(G * C):
        for kk in range(m):
            P[c * m + kk, kk * G * C + c] = 1.0
    prod = Lhat @ P @ Rhat
    # reorder the materialised map: rows into (class, member), columns into (block, position)
    A = fac["A"][0]
    rows = plan.queries(A).reshape(G * C * S, -1)
    sortedA = plan.keys(rows.T).reshape(m * b, -1).T
    torch.testing.assert_close(prod, sortedA, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("knobs", KNOBS)
def test_objective_never_decreases_and_is_bounded_by_softmax(gen, knobs):
    q, k, v = qkv(gen, d=8)
    q, k = 3 * q, 3 * k
    fac = monarch_factors(q, k, v, LAYOUT, num_iters=6, **knobs)
    obj = fac["objective"]
    assert (obj[:, 1:] >= obj[:, :-1] - 1e-3).all(), obj
    assert (obj[:, -1] > obj[:, 0]).all()
    s = q @ k.transpose(-1, -2) / math.sqrt(8)
    if knobs.get("causal_frames"):
        f = torch.arange(64) // 16
        s = s.masked_fill((f[None, :] // 2) > (f[:, None] // 2), float("-inf"))
    assert (obj[:, -1] <= torch.logsumexp(s, -1).sum(-1) + 1e-3).all()
    # independent recomputation of f(A) = sum <A, S> + H(A) from the materialised map
    A = fac["A"]
    direct = (A * s.nan_to_num(neginf=0.0)).sum((-1, -2)) + torch.special.entr(A).sum((-1, -2))
    torch.testing.assert_close(direct, obj[:, -1], atol=1e-3, rtol=1e-4)


def test_causal_chunks_never_attend_to_future_frames(gen):
    F, H, W, cf = 4, 4, 4, 2
    q, k, v = qkv(gen)
    knobs = dict(block=(1, 2, 4), causal_frames=True, chunk_frames=cf)
    A = monarch_factors(q, k, v, (F, H, W), num_iters=2, **knobs)["A"]
    chunk = torch.arange(64) // (H * W) // cf
    future = chunk[None, :] > chunk[:, None]
    assert (A[:, future] == 0).all()
    assert (A[:, ~future] > 0).all()
    # perturbing the future leaves the past untouched
    out = monarch_attention(q, k, v, (F, H, W), num_iters=2, backend="torch", **knobs)
    q2, k2, v2 = (t.clone() for t in (q, k, v))
    for t in (q2, k2, v2):
        t[:, 32:] += 5 * torch.randn(2, 32, 8, generator=gen)
    out2 = monarch_attention(q2, k2, v2, (F, H, W), num_iters=2, backend="torch", **knobs)
    torch.testing.assert_close(out[:, :32], out2[:, :32], atol=1e-6, rtol=0)
    assert not torch.allclose(out[:, 32:], out2[:, 32:])


@pytest.mark.parametrize("knobs", [dict(), dict(block=(1, 2, 4), h_reduce=2), dict(f_tied=False, block=(1, 2, 2))])
def test_kv_cache_generation_equals_full_recomputation(gen, knobs):
    F, H, W, cf = 6, 4, 4, 2
    q, k, v = qkv(gen, N=F * H * W, lead=(1, 2))
    full = monarch_attention(q, k, v, (F, H, W), num_iters=2, causal_frames=True, chunk_frames=cf,
                             backend="torch", **knobs)
    cache = MonarchKVCache((H, W), chunk_frames=cf, num_iters=2, backend="torch", **knobs)
    n = cf * H * W
    outs = [cache.step(q[..., i:i + n, :], k[..., i:i + n, :], v[..., i:i + n, :]) for i in range(0, F * H * W, n)]
    assert cache.frames == F
    torch.testing.assert_close(torch.cat(outs, -2), full, atol=1e-5, rtol=1e-5)


def test_flops_count_is_the_ratio_to_dense_and_knobs_move_it():
    base = make_plan((8, 16, 16))
    ratio = monarch_flops(base, 32) / dense_flops(base.N, 32)
    assert 0 < ratio < 0.25
    assert monarch_flops(make_plan((8, 16, 16), h_reduce=2), 32) < monarch_flops(base, 32)
    assert monarch_flops(make_plan((8, 16, 16), f_tied=False, h_reduce=4, w_reduce=4), 32) > \
        monarch_flops(make_plan((8, 16, 16), h_reduce=4, w_reduce=4), 32)
    assert monarch_flops(base, 32, num_iters=2) > monarch_flops(base, 32)
    assert 0 < MonarchAttention((8, 16, 16)).sparsity(32) < 1


def test_module_matches_function_and_keeps_sdpa_shapes(gen):
    q, k, v = qkv(gen, lead=(2, 3))
    mod = MonarchAttention(LAYOUT, num_iters=2, block=(1, 2, 4))
    out = mod(q, k, v)
    assert out.shape == (2, 3, 64, 8)
    torch.testing.assert_close(out, monarch_attention(q, k, v, LAYOUT, num_iters=2, block=(1, 2, 4)))


def test_gradients_flow_in_the_reference(gen):
    q, k, v = (t.requires_grad_() for t in qkv(gen))
    monarch_attention(q, k, v, LAYOUT, num_iters=2, backend="torch").square().sum().backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0 for t in (q, k, v))


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(layout=(4, 4, 5)), ValueError, "frames\\*height\\*width"),
    (dict(layout=(4, 4)), ValueError, "layout"),
    (dict(block=(1, 3, 4)), ValueError, "block\\[1\\]"),
    (dict(h_reduce=3), ValueError, "h_reduce"),
    (dict(num_iters=0), ValueError, "num_iters"),
    (dict(num_iters=1.5), TypeError, "num_iters"),
    (dict(causal_frames=True, chunk_frames=3), ValueError, "chunk_frames"),
    (dict(backend="cuda"), ValueError, "backend"),
    (dict(causal_frames="False"), TypeError, "causal_frames must be a bool"),   # a string would switch it on
    (dict(layout=(4.5, 4, 4)), TypeError, "layout\\[0\\]"),                 # not truncated to 4 frames
    (dict(chunk_frames=2), ValueError, "chunk_frames needs causal_frames"),
    (dict(f_tied=1), TypeError, "f_tied"),
])
def test_bad_input_raises_a_clear_error(gen, kwargs, err, match):
    q, k, v = qkv(gen)
    kwargs = dict(dict(layout=LAYOUT), **kwargs)
    with pytest.raises(err, match=match):
        monarch_attention(q, k, v, **kwargs)


def test_bad_tensors_raise_clear_errors(gen):
    q, k, v = qkv(gen)
    with pytest.raises(TypeError, match="dtype"):
        monarch_attention(q.double(), k, v, LAYOUT)
    with pytest.raises(TypeError, match="q must be a torch.Tensor"):
        monarch_attention(q.numpy(), k, v, LAYOUT)
    with pytest.raises(ValueError, match="device"):
        monarch_attention(q, k.to("meta"), v, LAYOUT)
    with pytest.raises(ValueError, match="shape"):
        monarch_attention(q[0], k, v, LAYOUT)


def test_empty_batch_and_module_knobs_are_checked_up_front(gen):
    q, k, v = qkv(gen)
    with pytest.raises(ValueError, match="non-empty"):
        monarch_attention(q[:0], k[:0], v[:0], LAYOUT)
    for knobs, err in [(dict(num_iters=0), ValueError), (dict(causal_frames="yes"), TypeError),
                       (dict(backend="cuda"), ValueError), (dict(scale=-1.0), ValueError),
                       (dict(blocks=(1, 4, 4)), TypeError)]:
        with pytest.raises(err):
            MonarchAttention(LAYOUT, **knobs)                            # at construction, not at the first call


def test_grouped_query_attention_equals_repeated_kv_heads(gen):
    """``enable_gqa=True`` as in SDPA: 4 query heads on 2 key/value heads equal the same call with each
    key/value head repeated for its query heads; without the flag the shapes are refused."""
    n = LAYOUT[0] * LAYOUT[1] * LAYOUT[2]
    q = torch.randn(2, 4, n, 8, generator=gen)
    k, v = torch.randn(2, 2, n, 8, generator=gen), torch.randn(2, 2, n, 8, generator=gen)
    out = monarch_attention(q, k, v, LAYOUT, backend="torch", enable_gqa=True)
    ref = monarch_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), LAYOUT, backend="torch")
    torch.testing.assert_close(out, ref)
    assert not torch.allclose(out[:, 0], out[:, 2])                     # heads 0 and 2 use different kv heads
    with pytest.raises(ValueError, match="enable_gqa"):
        monarch_attention(q, k, v, LAYOUT)
    with pytest.raises(ValueError, match="multiple"):
        monarch_attention(q[:, :3], k, v, LAYOUT, enable_gqa=True)
