import numpy as np
import pytest
import torch
from lvqmark import LVQVAE, GlobalVQVAE
from lvqmark.checks import jacobian_support, perturbation_support


def _window_mask(L, T, rf, s):
    return np.array([[j * s <= t < j * s + rf for t in range(T)] for j in range(L)])


@pytest.mark.parametrize("rf, s", [(4, 2), (6, 2), (4, 4)])
def test_local_tokens_see_only_their_window(rf, s):
    torch.manual_seed(0)
    vae = LVQVAE(3, window=16, receptive_field=rf, stride=s, dim=16, layers=2).eval()
    x = torch.randn(16, 3)
    mask = _window_mask(vae.n_tokens, 16, rf, s)
    assert vae.n_tokens == (16 - rf) // s + 1
    assert (jacobian_support(vae, x) == mask).all()
    assert (perturbation_support(vae, x) == mask).all()
    # the discrete tokens too: a big change at t never moves a token whose window misses t
    xs = torch.randn(50, 16, 3)
    base = vae.encode(xs)
    xp = xs.clone()
    xp[:, 7] += 5.0
    moved = (vae.encode(xp) != base).any(0).numpy()
    assert not moved[~mask[:, 7]].any()


def test_global_tokens_see_everything():
    torch.manual_seed(0)
    vae = GlobalVQVAE(3, window=16, dim=16, layers=1).eval()
    x = torch.randn(16, 3)
    assert jacobian_support(vae, x).all()
    assert perturbation_support(vae, x).all()


def test_shapes_and_forward():
    torch.manual_seed(0)
    vae = LVQVAE(5, dim=16)
    x = torch.randn(4, 32, 5)
    recon, tok, loss = vae(x)
    assert recon.shape == (4, 32, 5) and tok.shape == (4, 15) and loss.ndim <= 1
    vae.eval()
    tok = vae.encode(x)
    assert tok.shape == (4, 15) and tok.dtype == torch.int64
    assert vae.decode(tok).shape == (4, 32, 5)
    assert GlobalVQVAE(5, dim=16, receptive_field=4, stride=2).n_tokens == 15


def test_bad_input():
    vae = LVQVAE(5, dim=16).eval()
    x = torch.randn(2, 32, 5)
    x[0, 3, 1] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        vae.encode(x)
    with pytest.raises(ValueError, match="channels"):
        vae.encode(torch.randn(2, 32, 4))
    with pytest.raises(ValueError, match="shorter than one window"):
        vae.encode(torch.randn(2, 20, 5))
    with pytest.raises(TypeError, match="x must"):
        vae.encode("abc")
    with pytest.raises(ValueError, match="stride"):
        LVQVAE(5, window=32, receptive_field=4, stride=3)
    with pytest.raises(TypeError, match="dim"):
        LVQVAE(5, dim=64.0)
    with pytest.raises(ValueError, match="tokens"):
        vae.decode(torch.full((1, 15), 64))


def test_save_load_round_trip(tmp_path):
    torch.manual_seed(0)
    vae = GlobalVQVAE(5, dim=16)
    vae(torch.randn(8, 32, 5))
    vae.eval()
    x = torch.randn(6, 32, 5)
    vae.save(tmp_path / "g.pt")
    back = GlobalVQVAE.load(tmp_path / "g.pt")
    assert torch.equal(back.encode(x), vae.encode(x))
    assert torch.allclose(back.decode(vae.encode(x)), vae.decode(vae.encode(x)))
    with pytest.raises(ValueError, match="not a LVQVAE"):
        LVQVAE.load(tmp_path / "g.pt")
