import numpy as np
import pytest
from grace import GRACE, SAEConcepts, SpLiCE
from grace.bench import planted


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def world():
    """A planted sparse linear world: 12 concepts, d = 32, 3 active per embedding."""
    D, Z, coef = planted(np.random.default_rng(1), 1500, 12, 32, 3)
    return D, Z, coef


@pytest.fixture(scope="session")
def fitted(world):
    D, Z, _ = world
    return {"grace": GRACE(D, target_l0=3, epochs=30, random_state=0).fit(Z),
            "splice": SpLiCE(D, target_l0=3).fit(Z),
            "sae": SAEConcepts(D, n_features=64, k=6, target_l0=3, epochs=30, random_state=0).fit(Z)}
