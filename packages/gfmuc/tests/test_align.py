import numpy as np
import ot
import pytest
import torch
from gfmuc.align import alignment_loss, ot_cost, rbf_mmd2


def mmd_numpy(x, y, a, b, s2):
    k = lambda u, v: np.exp(-((u[:, None, :] - v[None, :, :]) ** 2).sum(-1) / (2 * s2))  # noqa: E731
    total = 0.0
    for (p, wp), (q, wq), sign in (((x, a), (x, a), 1), ((y, b), (y, b), 1), ((x, a), (y, b), -2)):
        kk = k(p, q)
        total += sign * sum(wp[i] * wq[j] * kk[i, j] for i in range(len(p)) for j in range(len(q)))
    return total


def test_mmd_matches_direct_sum(rng):
    x, y = rng.normal(size=(7, 3)), rng.normal(size=(5, 3)) + 1
    b = rng.random(5)
    got = rbf_mmd2(torch.tensor(x), torch.tensor(y), weights_y=torch.tensor(b), sigma2=0.7)
    assert float(got) == pytest.approx(mmd_numpy(x, y, np.full(7, 1 / 7), b / b.sum(), 0.7), rel=1e-10)


def test_mmd_zero_on_identical_and_positive_otherwise(rng):
    x = torch.tensor(rng.normal(size=(20, 4)))
    assert float(rbf_mmd2(x, x.clone())) == pytest.approx(0.0, abs=1e-12)
    assert float(rbf_mmd2(x, x + 2.0)) > 0.1


def test_ot_matches_pot(rng):
    x, y = rng.normal(size=(9, 3)), rng.normal(size=(6, 3))
    b = rng.random(6)
    m = ot.dist(x, y)
    want = ot.emd2(np.full(9, 1 / 9), b / b.sum(), m)
    got = ot_cost(torch.tensor(x), torch.tensor(y), weights_y=torch.tensor(b))
    assert float(got) == pytest.approx(want, rel=1e-8)


def test_ot_gradient_moves_points_towards_targets():
    x = torch.zeros(4, 2, requires_grad=True)
    y = torch.ones(4, 2, dtype=torch.float)
    ot_cost(x, y).backward()
    assert (x.grad < 0).all()


def test_bad_alignment_arguments():
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="align must be"):
        alignment_loss("kl", x, x)
    with pytest.raises(ValueError, match="weights must be"):
        rbf_mmd2(x, x, weights_y=torch.tensor([1.0, float("nan"), 1.0]))
