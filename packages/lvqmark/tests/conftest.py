import numpy as np
import pytest
import torch


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def tiny_mark():
    """A tiny LVQMark trained through all four stages on 300 synthetic windows (a few seconds)."""
    from lvqmark import LVQVAE, LVQMark, TokenPrior, Watermark, train_prior, train_robust_encoder, train_vae
    from lvqmark.data import standardize, synthetic_series

    torch.manual_seed(0)
    x, _ = standardize(synthetic_series(300, rng=0))
    x = torch.tensor(x)
    g = torch.Generator().manual_seed(0)
    vae = LVQVAE(5, dim=16, layers=1, codebook_size=16)
    train_vae(vae, x, steps=20, global_steps=3, batch=32, generator=g)
    prior = TokenPrior(16, vae.n_tokens, dim=16, layers=1)
    train_prior(prior, vae.encode(x), steps=20, batch=32, generator=g)
    robust = train_robust_encoder(vae, x, steps=4, batch=32, generator=torch.Generator().manual_seed(1))
    return LVQMark(vae, prior, robust, Watermark(3, codebook_size=16, delta=4.0)), x
