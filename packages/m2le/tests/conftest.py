import warnings

import numpy as np
import pytest
import torch

warnings.filterwarnings("ignore", message=".*lora.*", category=UserWarning)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def base():
    """The digits MLP after a short pretraining (shared by the tests)."""
    from m2le.data import pretrain

    torch.set_num_threads(1)
    return pretrain(0, epochs=5)


@pytest.fixture(scope="session")
def lc():
    from peft import LoraConfig

    return LoraConfig(r=2, lora_alpha=2, target_modules=["fc1", "fc2"], lora_dropout=0.0)


@pytest.fixture(scope="session")
def learned(base, lc):
    """M²LE after 3 domain tasks × 1 epoch (the brief's smoke)."""
    from m2le import M2LE
    from m2le.data import domain_tasks

    tasks = domain_tasks(0, T=3)
    cl = M2LE(base, lc, seed=0)
    for i, t in enumerate(tasks):
        model = cl.learn_task(t.loader(batch_size=128, seed=i), epochs=1, lr=1e-2)
    return cl, model, tasks
