import pytest
import torch
from monarchrt.data import bouncing_squares
from monarchrt.dit import AttentionOp, TinyVideoDiT, centroids, chunk_mask, rollout
from monarchrt.experiment_dit import train
from monarchrt.fidelity import monarch_for_budget


def small_model():
    torch.manual_seed(0)
    return TinyVideoDiT(frames=4, size=8, patch=2, dim=16, depth=1, heads=2)


@pytest.mark.parametrize("kind", ["dense", "monarch", "topk", "sliding_tile"])
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
