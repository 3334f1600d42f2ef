import numpy as np
import pytest
from entropyshap import LinearGaussianModel
from entropyshap.data import linear_design


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def lin3():
    """The brief's p = 3, d = 2 design: x1 on the shared direction of Y1, Y2; x2 on Y1 only; x3 null."""
    W, S = linear_design(3, 2, np.random.default_rng(0))
    return LinearGaussianModel(W, S)


@pytest.fixture(scope="session")
def gauss_bg():
    return np.random.default_rng(1).standard_normal((5000, 3))
