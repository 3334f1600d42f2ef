import numpy as np
import pytest
import torch
from munkey import MUNKEY, ViT, fit
from munkey.data import digits

CFG = dict(image_size=8, patch_size=2, num_classes=10, dim=32, depth=1, heads=2, mlp_dim=64)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def small_cfg():
    return dict(CFG)


@pytest.fixture(scope="session")
def split():
    return digits(np.random.default_rng(0), n=300)


@pytest.fixture(scope="session")
def trained(split):
    """A MUNKEY trained for 2 epochs on 210 digits (ids 0..209) and a plain ViT (shared, never mutated)."""
    torch.manual_seed(0)
    mk = fit(MUNKEY(**CFG, key_dim=16, topk=8), split.x_train, split.y_train, epochs=2)
    torch.manual_seed(0)
    vt = fit(ViT(**CFG), split.x_train, split.y_train, epochs=2)
    return mk, vt
