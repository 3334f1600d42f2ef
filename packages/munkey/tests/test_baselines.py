import copy

import pytest
import torch
from munkey.baselines import BASELINES, DATA_ACCESS, METHODS, _dampen


@pytest.mark.parametrize("name", BASELINES)
def test_baseline_returns_a_changed_copy(trained, split, name):
    _, vt = trained
    ref = copy.deepcopy(vt.state_dict())
    f, r = (split.x_train[:20], split.y_train[:20]), (split.x_train[20:80], split.y_train[20:80])
    out = METHODS[name](vt, f, r, lr=10.0 if name == "ssd" else 1e-2, epochs=1, bs=32)
    for k, v in vt.state_dict().items():
        assert torch.equal(v, ref[k]), f"{name} changed the original model"
    changed = any(not torch.equal(v, ref[k]) for k, v in out.state_dict().items())
    assert changed or name == "ssd"
    assert name in DATA_ACCESS


def test_ssd_dampening_rule():
    m = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[2.0, 2.0]]))
    i_d = [torch.tensor([[1.0, 1.0]])]
    i_f = [torch.tensor([[20.0, 5.0]])]  # only the first exceeds α·I_D with α = 10
    _dampen(m, i_d, i_f, alpha=10.0, lam=1.0)
    assert torch.allclose(m.weight, torch.tensor([[2.0 * 1 / 20, 2.0]]))
