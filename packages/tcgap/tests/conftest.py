import numpy as np
import pytest
from tcgap.data import gaussian_tasks, split_tasks


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def gauss():
    """5 tasks × 2 classes, d = 12, planted γ = 8: train / held-out γ split / test as task lists."""
    gen = gaussian_tasks(np.random.default_rng(1), gamma=8.0, d=12, within=3.0)
    t = gen["task_of_class"]
    tr, ga, te = gen["sample"](60), gen["sample"](60), gen["sample"](150)
    return {"gen": gen, "train": split_tasks(*tr, t), "gamma": ga, "test": split_tasks(*te, t), "task_of": t,
            "train_xy": tr, "test_xy": te}
