import numpy as np
import pytest

from paperworks.testing import run_cli


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The installed console script on experiment=smoke (one run shared by the tests that read it)."""
    d = tmp_path_factory.mktemp("smoke") / "run"
    return run_cli("meanfieldsteer", d), d


@pytest.fixture(scope="session")
def gmm1d():
    from meanfieldsteer import GaussianMixture

    return GaussianMixture([0.25, 0.75], [[-2.0], [2.0]], [0.25, 0.25])
