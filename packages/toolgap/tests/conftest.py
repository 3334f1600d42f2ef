import numpy as np
import pytest
import torch
from toolgap.model import tool_tokenizer
from toolgap.world import ToolWorld

from paperworks.lm.tiny import tiny_gpt2, tiny_llama

torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def world():
    return ToolWorld(0, n_entities=12, max_digits=3)


@pytest.fixture(scope="session")
def tok(world):
    return tool_tokenizer(world)


@pytest.fixture(scope="session")
def gpt2(tok):
    return tiny_gpt2(len(tok), width=32, layers=2, heads=4, n_ctx=64, seed=0)


@pytest.fixture(scope="session")
def llama(tok):
    return tiny_llama(len(tok), kv_heads=2, width=32, layers=2, heads=4, n_ctx=64, seed=1)
