import numpy as np
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    with threadpool_limits(1):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
