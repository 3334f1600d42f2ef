import torch
from monarchrt.data import bouncing_squares, random_qkv, structured_qkv
from monarchrt.fidelity import evaluate, monarch_for_budget
from monarchrt.monarch import dense_flops, make_plan, monarch_flops


def test_structured_generator_is_seeded_and_shaped():
    a = structured_qkv((4, 8, 8), 32, heads=2, generator=torch.Generator().manual_seed(1))
    b = structured_qkv((4, 8, 8), 32, heads=2, generator=torch.Generator().manual_seed(1))
    assert a[0].shape == (2, 256, 32)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)
    assert random_qkv(64, 8, heads=3)[0].shape == (3, 64, 8)


def test_bouncing_squares_stay_in_frame_and_track_the_square():
    vids, track = bouncing_squares(5, frames=8, size=16, generator=torch.Generator().manual_seed(0))
    assert vids.shape == (5, 8, 16, 16) and track.shape == (5, 8, 2)
    assert ((vids == 1).sum((-1, -2)) == 16).all()  # the whole 4x4 square is always visible
    ys = torch.arange(16.0)
    mass = (vids == 1).float()
    cy = (mass.sum(-1) * ys).sum(-1) / mass.sum((-1, -2))
    torch.testing.assert_close(cy, track[..., 0])


def test_monarch_budget_selection_respects_the_budget():
    knobs, ratio = monarch_for_budget((8, 16, 16), 32, 0.10)
    k = {x: knobs[x] for x in ("block", "h_reduce", "w_reduce")}
    assert ratio <= 0.10
    assert ratio == monarch_flops(make_plan((8, 16, 16), **k), 32) / dense_flops(2048, 32)


def test_evaluate_reports_every_method_at_matched_compute():
    q, k, v = structured_qkv((2, 8, 8), 16, generator=torch.Generator().manual_seed(0))
    rows = evaluate(q, k, v, (2, 8, 8), 0.5, seed=0, with_maps=True)
    assert {r["method"] for r in rows} == {"monarch", "misaligned", "topk", "sliding_tile", "nystrom"}
    for r in rows:
        assert r["flop_ratio"] <= 0.5 and r["rel_err"] >= 0
    assert all(r["row_kl"] >= -1e-6 for r in rows if r["method"] != "nystrom")
