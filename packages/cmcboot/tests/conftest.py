import numpy as np
import pytest
from cmcboot import riverswim, riverswim_behaviours, simulate_datasets

from paperworks.bench import pinned_threads


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    # the suites share 2 cores: a multi-threaded BLAS on tiny matrices only slows them down
    with pinned_threads(1):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def small_mdp():
    """A dense 3-state, 2-action MDP (every transition possible)."""
    P = np.array([[[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]],
                  [[0.3, 0.4, 0.3], [0.1, 0.2, 0.7]],
                  [[0.5, 0.25, 0.25], [0.3, 0.3, 0.4]]])
    R = np.array([[1.0, 0.0], [0.0, 2.0], [0.5, 1.5]])
    return P, R


@pytest.fixture
def river_chain(rng):
    """One RiverSwim chain of 3000 steps under the history-dependent behaviour."""
    P, R = riverswim(6)
    beh = riverswim_behaviours(6)["history"]
    data = simulate_datasets(P, beh, n_datasets=1, n_episodes=1, length=3000, initial=np.eye(6)[0], rng=rng)
    return P, R, data[0, 0]
