import pytest
import torch
from monarchrt.data import bouncing_squares
from monarchrt.dit import (
    AttentionOp,
    KVCache,
    TinyVideoDiT,
    capture_qkv,
    centroids,
    chunk_mask,
    context_loss,
    flow_matching_terms,
    noise_levels,
    rollout,
)
from monarchrt.experiment_dit import fidelity_on_model
from monarchrt.fidelity import monarch_for_budget
from monarchrt.train import train


def small_model():
    torch.manual_seed(0)
    return TinyVideoDiT(frames=4, size=8, patch=2, dim=16, depth=1, heads=2)


@pytest.mark.parametrize("kind", ["dense", "monarch", "topk", "sliding_tile", "uniform"])
def test_dit_is_chunk_causal_for_every_attention_op(kind):
    model = small_model()
    for p in model.parameters():  # make the zero-initialised output layers non-trivial
        p.data.add_(0.1 * torch.randn(p.shape))
    layout = model.layout
    knobs, _ = monarch_for_budget(layout, 8, 0.5, causal_frames=True, chunk_frames=2)
    op = AttentionOp(kind, layout, 2, monarch_knobs=knobs, topk=8, window=(1, 3, 3), tile=(1, 2, 2))
    x, t = torch.randn(2, 4, 8, 8), torch.rand(2, 4)
    y = model(x, t, op)
    x2, t2 = x.clone(), t.clone()
    x2[:, 2:] += torch.randn(2, 2, 8, 8)
    t2[:, 2:] = torch.rand(2, 2)
    y2 = model(x2, t2, op)
    torch.testing.assert_close(y[:, :2], y2[:, :2], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(y[:, 2:], y2[:, 2:])


def test_training_resumes_to_the_same_weights(tmp_path):
    data, _ = bouncing_squares(8, frames=4, size=8, square=2, generator=torch.Generator().manual_seed(0))
    op = AttentionOp("dense", (4, 4, 4), 2)
    full = train(small_model(), data, op, 4, batch=2, lr=1e-2, seed=0)
    ck = tmp_path / "ck.pt"
    train(small_model(), data, op, 2, batch=2, lr=1e-2, seed=0, ckpt=ck, every=2)
    resumed = train(small_model(), data, op, 4, batch=2, lr=1e-2, seed=0, ckpt=ck, every=2, resume=True)
    for a, b in zip(full.parameters(), resumed.parameters()):
        torch.testing.assert_close(a, b)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):     # never a silent fresh start
        train(small_model(), data, op, 4, batch=2, lr=1e-2, seed=0, ckpt=tmp_path / "missing.pt", resume=True)


def test_rollout_keeps_the_context_and_centroids_find_the_square():
    model = small_model()
    data, track = bouncing_squares(3, frames=4, size=8, square=2, generator=torch.Generator().manual_seed(1))
    out = rollout(model, data[:, :2], AttentionOp("dense", (4, 4, 4), 2), 2, steps=2)
    assert out.shape == data.shape
    torch.testing.assert_close(out[:, :2], data[:, :2])
    torch.testing.assert_close(centroids(data), track)
    assert chunk_mask((4, 4, 4), 2).sum() == 32 * 32 + 32 * 64


def test_attention_op_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        AttentionOp("flash", (4, 4, 4), 2)


def noisy_model(frames=6):
    torch.manual_seed(0)
    model = TinyVideoDiT(frames=frames, size=8, patch=2, dim=16, depth=2, heads=2)
    for p in model.parameters():
        p.data.add_(0.1 * torch.randn(p.shape))
    return model


def op_of(kind, layout):
    knobs, _ = monarch_for_budget(layout, 8, 0.5, causal_frames=True, chunk_frames=2)
    return AttentionOp(kind, layout, 2, monarch_knobs=dict(knobs, num_iters=2), topk=8, window=(3, 3, 3),
                       tile=(1, 2, 2))


@pytest.mark.parametrize("kind", ["dense", "monarch", "topk", "sliding_tile", "uniform"])
def test_kv_cached_sampler_equals_full_recomputation(kind):
    model = noisy_model()
    op = op_of(kind, model.layout)
    ctx = torch.randn(2, 2, 8, 8, generator=torch.Generator().manual_seed(3))
    cached = rollout(model, ctx, op, 2, steps=3, generator=torch.Generator().manual_seed(1), kv_cache=True)
    full = rollout(model, ctx, op, 2, steps=3, generator=torch.Generator().manual_seed(1), kv_cache=False)
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)
    assert cached[:, 2:].abs().mean() > 0.1  # frames were generated, not left empty
    moved = rollout(model, ctx + 1, op, 2, steps=3, generator=torch.Generator().manual_seed(1), kv_cache=True)
    assert not torch.allclose(moved[:, 2:], cached[:, 2:])  # ...and they depend on the cached context


def test_chunk_forward_with_cache_equals_the_full_forward():
    model = noisy_model()
    op = op_of("monarch", model.layout)
    x, t = torch.randn(2, 6, 8, 8), torch.rand(2, 6)
    cache = KVCache(len(model.blocks))
    parts = [model(x[:, i:i + 2], t[:, i:i + 2], op, cache=cache, commit=True) for i in (0, 2, 4)]
    assert cache.frames == 6 and cache.k[0].shape == (2, 2, 96, 8)
    torch.testing.assert_close(torch.cat(parts, 1), model(x, t, op), atol=1e-5, rtol=1e-5)


def test_hooks_capture_the_qkv_every_layer_attends_with():
    model = noisy_model(frames=4)
    dense = op_of("dense", model.layout)
    seen = []

    def recording(q, k, v):
        seen.append((q, k, v))
        return dense(q, k, v)

    x, t = torch.randn(2, 4, 8, 8), torch.rand(2, 4)
    got = capture_qkv(model, x, t, recording)
    assert len(got) == len(seen) == 2
    for a, b in zip(got, seen):
        for x1, x2 in zip(a, b):
            assert x1.shape == (2, 2, 64, 8)
            torch.testing.assert_close(x1, x2)


def test_fidelity_on_model_covers_layers_noise_levels_and_methods():
    model = noisy_model(frames=4)
    vids = torch.randn(1, 4, 8, 8)
    rows = fidelity_on_model(model, vids, op_of("dense", model.layout), [0.5], [0.2, 0.8], seed=0)
    assert {(r["layer"], r["noise"]) for r in rows} == {(0, 0.2), (0, 0.8), (1, 0.2), (1, 0.8)}
    assert {r["method"] for r in rows} == {"monarch", "misaligned", "topk", "sliding_tile", "nystrom"}
    assert all(r["source"] == "dit" and r["rel_err"] >= 0 for r in rows)


def test_uniform_control_averages_the_visible_values_whatever_q_and_k():
    layout, g = (4, 2, 2), torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 16, 5, generator=g) for _ in range(3))
    mask = chunk_mask(layout, 2)
    ref = (mask.float() / mask.sum(-1, keepdim=True)) @ v  # brute force: the mean over the allowed keys
    op = AttentionOp("uniform", layout, 2)
    torch.testing.assert_close(op(q, k, v), ref)
    torch.testing.assert_close(op(3 * q + 1, -k, v), ref)  # q and k do not matter
    torch.testing.assert_close(op.chunk(q[..., 8:16, :], k, v, 2), ref[..., 8:16, :])  # frames 2-3 from the cache


def test_noise_levels_follow_the_sampler_for_the_mixed_fraction():
    g = torch.Generator().manual_seed(0)
    t, w = noise_levels(4000, 8, 2, g, context_mix=0.5)
    ctx = w == 0  # clean context frames carry no loss and t = 0
    assert (t[ctx] == 0).all() and ((w == 0) | (w == 1)).all()
    sampler = ctx.any(-1)
    assert abs(sampler.float().mean().item() - 0.5) < 0.05
    for i in torch.nonzero(sampler)[:50, 0].tolist():
        start = int(ctx[i].sum())  # context = whole chunks before the generated one
        assert start % 2 == 0 and 2 <= start <= 6 and ctx[i, :start].all()
        assert t[i, start] == t[i, start + 1]  # the generated chunk shares one level
    t0, w0 = noise_levels(16, 8, 2, torch.Generator().manual_seed(0))
    assert (w0 == 1).all() and ((t0 > 0) & (t0 < 1)).all()  # context_mix=0: one level per frame
    with pytest.raises(ValueError, match="context_mix"):
        noise_levels(4, 8, 2, context_mix=1.5)


def test_weighted_flow_matching_and_context_loss_count_only_the_noisy_frames():
    model = noisy_model(frames=4)
    op = op_of("dense", model.layout)
    x0, eps, t = torch.randn(2, 4, 8, 8), torch.randn(2, 4, 8, 8), torch.rand(2, 4)
    full = flow_matching_terms(model, x0, t, eps, op)
    xt = (1 - t[..., None, None]) * x0 + t[..., None, None] * eps
    per_frame = (model(xt, t, op) - (eps - x0)).square().mean((-1, -2))
    torch.testing.assert_close(full, per_frame.mean(-1))
    w = torch.tensor([[0.0, 0, 1, 1], [1.0, 0, 0, 0]])
    torch.testing.assert_close(flow_matching_terms(model, x0, t, eps, op, w),
                               torch.stack([per_frame[0, 2:].mean(), per_frame[1, 0]]))
    # the context loss: clean frames 0-1, the chunk 2-3 at one level, the loss of that chunk only
    g = torch.Generator().manual_seed(0)
    tc = torch.rand(2, 4, generator=g)
    tc[:, :2], tc[:, 3] = 0.0, tc[:, 2]
    ec = torch.randn(2, 4, 8, 8, generator=g)
    xc = (1 - tc[..., None, None]) * x0 + tc[..., None, None] * ec
    ref = (model(xc, tc, op) - (ec - x0))[:, 2:].square().mean((-1, -2, -3))
    torch.testing.assert_close(context_loss(model, x0, op, 2, torch.Generator().manual_seed(0)), ref)
