import numpy as np
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def policy():
    """A tiny coordinate-wise policy, meta-trained once for the whole session (frozen)."""
    from rlqgrad import HEA, UpdatePolicy, meta_train
    from rlqgrad.data import meta_tasks

    hea = HEA(4, 2)
    tasks = [hea.cost(X, y) for X, y in meta_tasks(4, 2, seed=0)]
    pi = UpdatePolicy(None, hidden=(16, 16), coordinatewise=True)
    meta_train(pi, tasks, total_steps=512, seed=0)
    return pi


@pytest.fixture(scope="session")
def moons():
    from rlqgrad.data import load_split

    return load_split("moons", 4, seed=0)
