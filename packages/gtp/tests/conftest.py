import numpy as np
import pytest
import torch


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def pendulum_data():
    from gtp import generate_dataset

    return generate_dataset("Pendulum-v1", 2000, seed=0)


@pytest.fixture(scope="session")
def pendulum_models(pendulum_data):
    """Tiny models shared by the suite: 2k transitions, 200 prior steps (the brief's smoke size)."""
    from gtp import fit_models

    torch.set_num_threads(1)
    return fit_models(pendulum_data, prior_steps=200, model_steps=200, value_steps=200, prior_hidden=128, seed=0)
