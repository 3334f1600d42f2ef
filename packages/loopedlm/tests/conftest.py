import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def small_model():
    from loopedlm import LoopedConfig, LoopedLM

    torch.manual_seed(0)
    return LoopedLM(LoopedConfig(vocab_size=16, d_model=32, n_heads=4, prelude=1, block=3, coda=1)).eval()
