import numpy as np
import pytest
import torch
from gfmuc import GFMUC, csbm, motif_graphs

SMALL = {"hidden_channels": 16, "num_prototypes": 6, "pretrain_epochs": 20, "prototype_epochs": 5,
         "align_epochs": 10, "head_epochs": 10, "n_init": 3}


@pytest.fixture(scope="session")
def small():
    return dict(SMALL)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def sources():
    return [csbm(200, 4, homophily=0.85, feature_dim=32, snr=2.0, seed=1),
            csbm(200, 5, homophily=0.8, feature_dim=64, snr=2.0, seed=2),
            motif_graphs(9, base_nodes=8, seed=3)]


@pytest.fixture(scope="session")
def target():
    return csbm(200, 3, homophily=0.85, feature_dim=48, snr=2.0, seed=4, feature_law="laplace")


@pytest.fixture(scope="session")
def pretrained(sources):
    torch.set_num_threads(1)
    return GFMUC(**SMALL, random_state=0).pretrain(sources)
