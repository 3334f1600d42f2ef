import pytest
import torch
from mcr2opt import closed_form_maximizer

EPS, LAM = 0.5, 0.1  # the smoke setting of the tests


@pytest.fixture(scope="session")
def maximizer():
    """A closed-form maximizer at d = 8, K = 2, n = 20 (the smoke setting)."""
    return closed_form_maximizer([10, 10], 8, eps=EPS, lam=LAM, generator=torch.Generator().manual_seed(3))


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)
