import numpy as np
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def small_task():
    from hebbrnn import HierarchicalRecall

    return HierarchicalRecall(n_items=4, chunks=(2, 2), item_dim=16, n_cues=None, chunk_gap=2, delay=1)


@pytest.fixture(scope="session")
def trained_small(small_task):
    """A Hebb-RNN meta-trained on 4-item lists for 200 episodes (shared by the tests)."""
    from hebbrnn import HebbRNN, meta_train

    torch.manual_seed(0)
    model = HebbRNN(small_task.input_size, 32, small_task.item_dim, eta=0.01, decay=0.98)
    hist = meta_train(model, small_task, episodes=200, batch_size=64, lr=0.003, seed=0)
    return model, hist
