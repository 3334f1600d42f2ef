import pytest
import torch
from lvqmark import attacks


def _x():
    return torch.randn(6, 32, 5, generator=torch.Generator().manual_seed(0))


def test_offset_is_a_constant_shift_of_the_range():
    x = _x()
    y = attacks.offset(x, 0.3, generator=torch.Generator().manual_seed(1))
    d = y - x
    rng = x.amax(1) - x.amin(1)
    assert torch.allclose(d, d[:, :1].expand_as(d))
    assert torch.allclose(d[:, 0].abs(), 0.3 * rng, atol=1e-6)


def test_crop_fills_one_segment_with_the_midpoint():
    x = _x()
    y = attacks.crop(x, 0.3, generator=torch.Generator().manual_seed(1))
    k = round(0.3 * 32)
    for b in range(6):
        changed = torch.nonzero((y[b] != x[b]).any(1)).flatten()
        a, e = int(changed.min()), int(changed.max()) + 1
        assert e - a <= k
        # recover the cropped segment: the k steps with the constant fill
        seg = [s for s in range(32 - k + 1) if torch.allclose(y[b, s:s + k], y[b, s].expand(k, 5))]
        s = next(s for s in seg if s <= a and s + k >= e)
        left, right = (x[b, s - 1] if s > 0 else None), (x[b, s + k] if s + k < 32 else None)
        fill = right if left is None else left if right is None else (left + right) / 2
        assert torch.allclose(y[b, s], fill)


def test_insert_replaces_k_steps_with_min_or_max():
    x = _x()
    y = attacks.insert(x, 0.3, generator=torch.Generator().manual_seed(1))
    k = round(0.3 * 32)
    lo, hi = x.amin(1, keepdim=True), x.amax(1, keepdim=True)
    changed = (y != x).any(2)
    assert (changed.sum(1) <= k).all()
    assert ((y == lo) | (y == hi) | (y == x)).all()


@pytest.mark.parametrize("fn", [attacks.offset, attacks.crop, attacks.insert])
def test_zero_strength_is_identity_and_bad_strength(fn):
    x = _x()
    assert torch.equal(fn(x, 0.0, generator=torch.Generator()), x)
    with pytest.raises(ValueError, match="strength"):
        fn(x, 1.0)
    with pytest.raises(TypeError, match="strength"):
        fn(x, "0.3")


def test_draws_follow_the_generator():
    x = _x()
    a = attacks.crop(x, 0.3, generator=torch.Generator().manual_seed(5))
    b = attacks.crop(x, 0.3, generator=torch.Generator().manual_seed(5))
    c = attacks.crop(x, 0.3, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)
