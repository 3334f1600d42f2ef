import numpy as np
import pytest
from occirl.envs import garnet_mdp
from occirl.mdp import _occ, _soft_vi


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def small():
    """A 6-state, 3-action Garnet (discounted): P, p0, gamma, hidden R, expert π_E and d_E."""
    rng = np.random.default_rng(42)
    S, A, g = 6, 3, 0.9
    P = garnet_mdp(S, A, 3, rng)
    p0 = rng.dirichlet(np.ones(S))
    R = rng.normal(size=(S, A))
    _, _, pi_E = _soft_vi(P, R, g, None)
    d_E = _occ(P, pi_E, p0, g, None)
    return {"P": P, "p0": p0, "gamma": g, "R": R, "pi_E": pi_E, "d_E": d_E, "S": S, "A": A}
