import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _random_hists(rng, m, shape, sparse=False):
    """``m`` random probability histograms on ``shape`` (optionally with ~70% zeros)."""
    h = rng.random((m, *shape))
    if sparse:
        h *= rng.random(h.shape) < 0.3
        h.reshape(m, -1)[:, 0] += 0.1  # never all zero
    return h / h.sum(axis=tuple(range(1, h.ndim)), keepdims=True)


@pytest.fixture
def random_hists():
    return _random_hists
