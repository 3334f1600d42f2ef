import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def gmm1d():
    from meanfieldsteer import GaussianMixture

    return GaussianMixture([0.25, 0.75], [[-2.0], [2.0]], [0.25, 0.25])
