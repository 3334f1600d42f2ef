import pytest
import torch
from mcr2.primitives.coding_rate import DeltaR
from mcr2opt import MCR2Loss, mcr2, value_and_grad
from mcr2opt.baselines import logdet_value_and_grad, one_hot
from mcr2opt.objective import _logdet_and_solve


@pytest.mark.parametrize("n_k,d", [(5, 12), (30, 6)])
def test_value_equals_mcr2_deltaR_float32(gen, n_k, d):
    Z = torch.randn(3 * n_k, d, generator=gen)
    y = torch.arange(3).repeat_interleave(n_k)
    ours = mcr2(Z, y, eps=0.5)
    ref = DeltaR(Z, one_hot(y, len(y)), 0.5)
    assert ours.dtype == torch.float32
    assert abs(float(ours) - float(ref)) <= 1e-5 * abs(float(ref))


def test_unequal_classes_and_one_hot_agree(gen):
    Z = torch.randn(23, 7, generator=gen, dtype=torch.float64)
    y = torch.tensor([0] * 5 + [1] * 11 + [2] * 7)
    a = mcr2(Z, y, eps=0.3, lam=0.2)
    b = mcr2(Z, one_hot(y, 23), eps=0.3, lam=0.2)
    c = logdet_value_and_grad(Z, y, eps=0.3, lam=0.2)[0]
    assert torch.allclose(a, b, rtol=0, atol=1e-12) and torch.allclose(a, c, rtol=1e-12)


@pytest.mark.parametrize("n_k,d", [(4, 9), (20, 5)])
def test_gradient_equals_autograd(gen, n_k, d):
    Z = torch.randn(3 * n_k + 1, d, generator=gen, dtype=torch.float64)
    y = torch.tensor([0] * (n_k + 1) + [1] * n_k + [2] * n_k)
    F, g = value_and_grad(Z, y, eps=0.5, lam=0.3)
    F2, g2 = logdet_value_and_grad(Z, y, eps=0.5, lam=0.3)
    assert torch.allclose(F, F2, rtol=1e-12)
    assert float((g - g2).norm() / g2.norm()) < 1e-10


def test_gradcheck_through_the_loss(gen):
    Z = torch.randn(12, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    y = torch.arange(12) % 3
    loss = MCR2Loss(eps=0.5, lam=0.1)
    assert torch.autograd.gradcheck(lambda z: loss(z, y), (Z,))
    lossn = MCR2Loss(eps=0.5, normalize=True)
    assert torch.autograd.gradcheck(lambda z: lossn(z, y), (Z,))


def test_both_gram_forms_agree(gen):
    for m, d in [(6, 15), (15, 6)]:
        Z = torch.randn(m, d, generator=gen, dtype=torch.float64)
        ld, g = _logdet_and_solve(Z, 0.7, need_grad=True)
        M = torch.eye(d, dtype=Z.dtype) + 0.7 * Z.T @ Z
        assert torch.allclose(ld, torch.logdet(M), rtol=1e-12)
        assert torch.allclose(g, 0.7 * Z @ torch.linalg.inv(M), atol=1e-12)
        Mn = torch.eye(m, dtype=Z.dtype) + 0.7 * Z @ Z.T
        assert torch.allclose(torch.logdet(Mn), torch.logdet(M), rtol=1e-12)   # Sylvester


def test_loss_is_minus_F_and_trains(gen):
    Z = torch.randn(40, 6, generator=gen, requires_grad=True)
    y = torch.arange(40) % 4
    loss = MCR2Loss(eps=0.5)
    assert torch.allclose(loss(Z, y), -mcr2(Z.detach(), y, eps=0.5))
    opt = torch.optim.SGD([Z], lr=0.05)
    first = float(loss(Z, y))
    for _ in range(20):
        opt.zero_grad()
        loss(Z, y).backward()
        opt.step()
    assert float(loss(Z, y)) < first


def test_no_nan_on_large_unnormalised_features(gen):
    Z = 1e5 * torch.randn(60, 16, generator=gen)   # float32: α‖Z‖² ~ 1e10
    y = torch.arange(60) % 3
    F, g = value_and_grad(Z, y, eps=0.5)
    assert torch.isfinite(F) and bool(torch.isfinite(g).all())
    F64 = mcr2(Z.double(), y, eps=0.5)
    assert abs(float(F) - float(F64)) <= 1e-4 * abs(float(F64))
    Fn, gn = value_and_grad(Z, y, eps=0.5, normalize=True)
    assert torch.allclose(Fn, mcr2(Z / Z.norm(dim=1, keepdim=True), y, eps=0.5), rtol=1e-5)


def test_bad_input(gen):
    Z = torch.randn(10, 3, generator=gen)
    y = torch.arange(10) % 2
    with pytest.raises(ValueError, match="Z must be finite"):
        mcr2(torch.full((10, 3), float("nan")), y)
    with pytest.raises(ValueError, match="Z must be finite"):
        mcr2(Z.clone().index_fill_(0, torch.tensor([2]), float("inf")), y)
    with pytest.raises(ValueError, match="eps"):
        mcr2(Z, y, eps=0.0)
    with pytest.raises(ValueError, match="lam"):
        mcr2(Z, y, lam=-1.0)
    with pytest.raises(TypeError, match="eps"):
        mcr2(Z, y, eps="0.5")
    with pytest.raises(ValueError, match="y has 9"):
        mcr2(Z, y[:9])
    with pytest.raises(ValueError, match="Z must have shape"):
        mcr2(Z[None], y)
    with pytest.raises(TypeError, match="Z must be a torch.Tensor"):
        mcr2(Z.numpy(), y)
    empty = torch.nn.functional.one_hot(y, 3)
    with pytest.raises(ValueError, match="class 2 is empty"):
        mcr2(Z, empty)
    with pytest.raises(TypeError, match="integer labels"):
        mcr2(Z, y.float())
    with pytest.raises(ValueError, match="lam"):
        MCR2Loss(lam=-0.1)


def test_mcr2_baseline_takes_float64_features(gen):
    from mcr2opt.baselines import mcr2_value_and_grad

    Z = torch.randn(30, 5, generator=gen, dtype=torch.float64)
    y = torch.arange(30) % 3
    F, g = mcr2_value_and_grad(Z, one_hot(y, 30, dtype=torch.float64), eps=0.5)
    assert F.dtype == torch.float32 and g.shape == Z.shape
    assert abs(float(F) - float(mcr2(Z, y, eps=0.5))) <= 1e-5 * abs(float(F))
