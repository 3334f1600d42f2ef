import math

import numpy as np
import pytest
import torch
from lvqmark import Watermark
from scipy.stats import kstest


def test_split_is_half_and_fixed_by_key():
    a, b, c = (Watermark(k, codebook_size=64) for k in (5, 5, 6))
    assert int(a.green_mask(0).sum()) == 32
    assert torch.equal(a.green_mask(0), b.green_mask(0))
    assert not torch.equal(a.green_mask(0), c.green_mask(0))


def test_alternation_flips_odd_positions_and_can_be_off():
    wm = Watermark(1, codebook_size=8)
    assert torch.equal(wm.green_mask(3), ~wm.green_mask(0))
    assert torch.equal(wm.green_mask(4), wm.green_mask(0))
    off = Watermark(1, codebook_size=8, alternate=False)
    assert torch.equal(off.green_mask(3), off.green_mask(0))
    # tensor positions give the same rows as int positions (absolute position, per row)
    pos = torch.tensor([0, 1, 2, 7])
    assert torch.equal(wm.green_mask(pos), torch.stack([wm.green_mask(int(p)) for p in pos]))


def test_warmup_unbiased_then_delta_on_green():
    wm = Watermark(2, codebook_size=16, delta=3.0, length=15)
    assert wm.warmup_tokens == 4 and Watermark(2, codebook_size=16, length=9).warmup_tokens == 3
    logits = torch.randn(5, 16)
    for i in range(4):
        assert torch.equal(wm(i, logits), logits)
    for i in range(4, 15):
        assert torch.allclose(wm(i, logits) - logits, 3.0 * wm.green_mask(i).float().expand(5, 16))
    pos = torch.tensor([0, 3, 4, 9, 14])
    out = wm(pos, logits) - logits
    assert torch.equal(out[:2], torch.zeros(2, 16))
    assert torch.allclose(out[2:], 3.0 * wm.green_mask(pos[2:]).float())


def test_z_on_hand_built_streams():
    wm = Watermark(0, codebook_size=64, length=15)
    lp = 15 - 4
    green = torch.tensor([[int(torch.nonzero(wm.green_mask(i))[0]) for i in range(15)]])
    red = torch.tensor([[int(torch.nonzero(~wm.green_mask(i))[0]) for i in range(15)]])
    z, n_valid = wm.z_score(torch.cat([green, red]))
    assert n_valid == lp
    assert z[0] == pytest.approx(math.sqrt(lp)) and z[1] == pytest.approx(-math.sqrt(lp))
    even = Watermark(0, codebook_size=64, length=16, warmup=0)
    assert float(even.z_score(torch.full((1, 16), 7))[0][0]) == 0.0     # one code repeated: balanced
    # brute force: z = (g - 1/2) sqrt(L') / (1/2)
    tok = torch.randint(0, 64, (20, 15), generator=torch.Generator().manual_seed(0))
    g = np.array([[bool(wm.green_mask(i)[t]) for i, t in enumerate(row)][4:] for row in tok.tolist()]).mean(1)
    np.testing.assert_allclose(wm.z_score(tok)[0].numpy(), (g - 0.5) * math.sqrt(lp) / 0.5)


def test_wrong_key_z_is_standard_normal_on_key_independent_streams():
    """Streams drawn without this key's bias, scored under independent keys: z ~ N(0, 1) (KS)."""
    K, L, n = 64, 2000, 300
    tok = torch.randint(0, K, (n, L), generator=torch.Generator().manual_seed(0))
    z = np.array([float(Watermark(1000 + b, codebook_size=K, length=L, warmup=0).z_score(tok[b:b + 1])[0][0])
                  for b in range(n)])
    assert kstest(z, "norm").pvalue > 0.01


def test_wrong_key_on_strong_watermark_is_overdispersed():
    """A documented property of one fixed partition: a strongly watermarked stream is mostly key-1 green, so its
    green fraction under key 2 is the (hypergeometric) overlap of the two green lists: wrong-key z spreads
    wider than N(0, 1) across keys, while the right key gives large z."""
    K, L, n = 64, 400, 200
    wm = Watermark(1, codebook_size=K, delta=6.0, length=L, warmup=0)
    g = torch.Generator().manual_seed(0)
    tok = torch.stack([torch.multinomial(torch.softmax(wm(i, torch.zeros(n, K)), -1), 1, generator=g)[:, 0]
                       for i in range(L)], 1)
    z_wrong = np.array([float(wm.with_key(1000 + b).z_score(tok[b:b + 1])[0][0]) for b in range(n)])
    assert abs(z_wrong.mean()) < 1.0 and z_wrong.std() > 1.5
    assert wm.z_score(tok)[0].min() > 10


@pytest.mark.parametrize("kw, err, match", [
    (dict(delta=-1.0), ValueError, "delta"), (dict(delta=float("nan")), ValueError, "delta"),
    (dict(delta="10"), TypeError, "delta"), (dict(codebook_size=63), ValueError, "codebook_size"),
    (dict(warmup=-1), ValueError, "warmup"), (dict(warmup="4"), TypeError, "warmup"),
    (dict(alternate=1), TypeError, "alternate"),
])
def test_bad_settings(kw, err, match):
    args = dict(codebook_size=64) | kw
    with pytest.raises(err, match=match):
        Watermark(1, **args)


def test_bad_key_positions_and_auto_warmup_without_length():
    with pytest.raises(TypeError, match="key"):
        Watermark("1", codebook_size=8)
    wm = Watermark(1, codebook_size=8)
    with pytest.raises(ValueError, match="length"):
        wm(5, torch.zeros(2, 8))
    bound = wm.with_length(15)
    with pytest.raises(ValueError, match="positions"):
        bound(-1, torch.zeros(2, 8))
    with pytest.raises(ValueError, match="rows"):
        bound(torch.tensor([1, 2, 3]), torch.zeros(2, 8))
    with pytest.raises(ValueError, match="differ"):
        bound.check_matches(Watermark(1, codebook_size=8, delta=4.0, length=15))
    bound.check_matches(bound.with_key(9))                    # another key is allowed
