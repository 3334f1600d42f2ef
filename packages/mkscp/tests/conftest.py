import numpy as np
import pytest

from paperworks.bench import pinned_threads


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    # the machine is shared: one BLAS thread is faster than two oversubscribed ones
    with pinned_threads(1):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
