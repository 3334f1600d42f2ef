import pytest
import torch
from m2le import empirical_fisher
from m2le.fisher import per_sample_fisher
from torch import nn


class Scaled(nn.Module):  # a parameter outside nn.Linear: the torch.func path
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 3)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 3))

    def forward(self, x):
        return self.lin(torch.tanh(x)) * self.scale


def _data(n=37, d=64, c=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(n, d, generator=g), torch.randint(0, c, (n,), generator=g)
    return [(X[:20], y[:20]), (X[20:], y[20:])]


def test_closed_form_equals_per_sample_loop(base):
    data = _data()
    fast = empirical_fisher(base, data)
    slow = per_sample_fisher(base, data)
    assert set(fast) == set(dict(base.named_parameters()))
    for k in fast:
        assert torch.allclose(fast[k], slow[k], rtol=1e-4, atol=1e-6 * float(slow[k].abs().max())), k
    assert all(p.requires_grad for p in base.parameters())  # the loop restores the flags


def test_func_path_equals_loop():
    torch.manual_seed(0)
    m = Scaled()
    data = _data(d=5, c=3)
    fast, slow = empirical_fisher(m, data), per_sample_fisher(m, data)
    for k in fast:
        assert torch.allclose(fast[k], slow[k], rtol=1e-4, atol=1e-9), k


def test_fisher_uses_true_labels(base):
    X, y = _data()[0]
    a = empirical_fisher(base, [(X, y)], params=["fc1.weight"])["fc1.weight"]
    b = empirical_fisher(base, [(X, (y + 1) % 10)], params=["fc1.weight"])["fc1.weight"]
    assert not torch.allclose(a, b)


def test_fisher_bad_input(base):
    X, y = _data()[0]
    with pytest.raises(ValueError, match="labels outside the head's 10 classes"):
        empirical_fisher(base, [(X, y + 5)])
    with pytest.raises(ValueError, match="not parameters of the model"):
        empirical_fisher(base, [(X, y)], params=["nope.weight"])
    with pytest.raises(TypeError, match="loader must be an iterable"):
        empirical_fisher(base, X)
