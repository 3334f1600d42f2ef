import numpy as np
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def tok():
    from paperworks.lm import word_tokenizer

    words = "the a of to in is are evaluations test prompts model benchmark doc river bread mill".split()
    return word_tokenizer(words + [f"w{i}" for i in range(40)], model_max_length=128)


@pytest.fixture(scope="session")
def docs(rng_session=None):
    r = np.random.default_rng(1)
    return [" ".join(f"w{j}" for j in r.integers(0, 40, int(n))) for n in r.integers(3, 20, 12)]


@pytest.fixture(scope="session")
def gpt2(tok):
    from paperworks.lm import tiny_gpt2

    return tiny_gpt2(len(tok), width=32, layers=2, heads=4, n_ctx=128, seed=0)
