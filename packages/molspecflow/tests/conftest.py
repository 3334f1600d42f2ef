import numpy as np
import pytest
import torch


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def small_data():
    from molspecflow import make_dataset

    return make_dataset(200, seed=0, test_profile="iontrap")


@pytest.fixture(scope="session")
def tiny_model(small_data):
    from molspecflow import MolSpecFlow
    from molspecflow.train import train

    torch.manual_seed(0)
    model = MolSpecFlow(dim=32, depth=1, heads=2)
    train(model, small_data, rows=np.nonzero(small_data.role != "test")[0], steps=20, batch_size=16, seed=0)
    return model
