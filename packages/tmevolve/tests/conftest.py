import os

import numpy as np
import pytest
import torch

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def smoke_data():
    from tmevolve import SyntheticSlides

    return {"train": SyntheticSlides(64, grid=16, label="infiltration", seed=11),
            "val": SyntheticSlides(32, grid=16, label="infiltration", seed=12),
            "test": SyntheticSlides(64, grid=16, label="infiltration", seed=13)}


@pytest.fixture(scope="session")
def trained(smoke_data):
    """TMEvolve trained as in the smoke experiment (16×16 grids, 64 slides, 3 epochs), shared by tests."""
    from tmevolve import TMEvolve, fit, prototypes

    torch.manual_seed(0)
    model = TMEvolve(64, 64, 1, concepts=prototypes(), num_steps=4, dt=0.5)
    info = fit(model, smoke_data["train"], smoke_data["val"], task="classification", lr=1e-2, epochs=3,
               batch_size=8, patience=3)
    return model, info
