import numpy as np
import pytest

from paperworks.bench import pinned_threads


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    with pinned_threads(1):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
