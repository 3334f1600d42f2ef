import pytest
import torch
from monarchrt import baselines as B
from monarchrt import monarch_attention


def qkv(gen, N=64, d=8):
    return [torch.randn(2, N, d, generator=gen) for _ in range(3)]


def test_topk_with_all_keys_is_dense_and_keeps_k_entries(gen):
    q, k, v = qkv(gen)
    torch.testing.assert_close(B.topk_attention(q, k, v, 64), B.dense_attention(q, k, v), atol=1e-5, rtol=1e-5)
    assert ((B.topk_map(q, k, 5) > 0).sum(-1) == 5).all()


def test_sliding_tile_full_window_is_dense_and_budget_count_matches_mask(gen):
    layout, tile = (4, 4, 4), (1, 2, 2)
    q, k, v = qkv(gen)
    full = B.sliding_tile_mask(layout, tile, (7, 3, 3))
    assert full.all()
    torch.testing.assert_close(B.sliding_tile_attention(q, k, v, full), B.dense_attention(q, k, v),
                               atol=1e-5, rtol=1e-5)
    win, keys = B.sliding_tile_for_budget(layout, tile, 20.0)
    assert keys <= 20.0
    assert B.sliding_tile_mask(layout, tile, win).float().sum(-1).mean().item() == pytest.approx(keys)


def test_nystrom_with_every_token_a_landmark_is_dense(gen):
    q, k, v = qkv(gen, N=16)
    torch.testing.assert_close(B.nystrom_attention(q, k, v, 16), B.dense_attention(q, k, v), atol=1e-3, rtol=1e-3)
    with pytest.raises(ValueError, match="landmarks"):
        B.nystrom_attention(q, k, v, 5)


def test_misaligned_with_identity_permutation_is_monarch_and_random_one_differs(gen):
    q, k, v = qkv(gen)
    ident = B.misaligned_monarch(q, k, v, (4, 4, 4), torch.arange(64))
    torch.testing.assert_close(ident, monarch_attention(q, k, v, (4, 4, 4)))
    mis = B.misaligned_monarch(q, k, v, (4, 4, 4), torch.randperm(64, generator=gen))
    assert not torch.allclose(mis, ident, atol=1e-4)
