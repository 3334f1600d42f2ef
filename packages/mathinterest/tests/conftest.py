import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def study():
    from mathinterest import SimulatedStudy

    return SimulatedStudy(n_problems=40, n_crowd=30, n_imo=30, seed=0)


@pytest.fixture(scope="session")
def humans(study):
    return study.ratings()


@pytest.fixture(scope="session")
def tiny(study):
    """A random tiny GPT-2 and its word tokenizer (shared: built once)."""
    from mathinterest.tiny import tiny_rater_model

    return tiny_rater_model(study.problems()["text"], seed=0)
