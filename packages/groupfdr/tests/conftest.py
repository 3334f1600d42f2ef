import numpy as np
import pytest
from groupfdr import simulate_var_groups
from groupfdr.mirror import as_groups


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def small():
    """A small grouped design (n=150, 8 groups × 3 lags, ρ = 0.6) and its mirror noise."""
    X, y, groups, active = simulate_var_groups(150, 8, 3, 2, 0.6, random_state=3, signal=0.3)
    _, idx = as_groups(groups, X.shape[1])
    rng = np.random.default_rng(11)
    Z = [rng.standard_normal((len(y), len(g))) for g in idx]
    return X, y, groups, active, idx, Z
