import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def connected_graph(n: int, gen: torch.Generator, chords: int | None = None) -> torch.Tensor:
    """A ring plus random chords (connected), both edge directions."""
    ring = torch.stack([torch.arange(n), torch.roll(torch.arange(n), -1)])
    extra = torch.randint(0, n, (2, chords if chords is not None else n // 2), generator=gen)
    ei = torch.cat([ring, extra], 1)
    ei = ei[:, ei[0] != ei[1]]
    return torch.cat([ei, ei.flip(0)], 1)


@pytest.fixture
def graph(gen):
    n = 14
    return torch.randn(n, 3, generator=gen, dtype=torch.float64), connected_graph(n, gen)


@pytest.fixture
def connected():
    """``connected(n, gen)``: a connected random graph (see :func:`connected_graph`)."""
    return connected_graph
