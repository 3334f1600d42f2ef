import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


@pytest.fixture
def interpret(monkeypatch):
    """Run Triton kernels in the interpreter (CPU)."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("PAPERWORKS_FORCE_REFERENCE", raising=False)
