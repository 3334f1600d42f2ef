import pytest
import torch
from graphmuon import inverse_sqrt, newton_schulz, svd_polar
from graphmuon.linalg import NS_COEFFICIENTS, inverse_sqrt_eigh, inverse_sqrt_newton
from torch.optim._muon import _zeropower_via_newtonschulz


@pytest.mark.parametrize("shape", [(8, 8), (16, 5), (5, 16)])
def test_newton_schulz_is_torch_muons_iteration(gen, shape):
    g = torch.randn(*shape, generator=gen)
    ours = newton_schulz(g)
    ref = _zeropower_via_newtonschulz(g, NS_COEFFICIENTS, 5, 1e-7)
    assert torch.equal(ours, ref)


@pytest.mark.parametrize("shape", [(12, 12), (20, 7), (7, 20)])
def test_cubic_newton_schulz_converges_to_svd_polar(gen, shape):
    g = torch.randn(*shape, generator=gen, dtype=torch.float64)
    q = newton_schulz(g, steps=60, coefficients=(1.5, -0.5, 0.0), dtype=torch.float64)
    torch.testing.assert_close(q, svd_polar(g), atol=1e-8, rtol=0)


def test_quintic_newton_schulz_approximates_svd_polar(gen):
    g = torch.randn(32, 24, generator=gen)
    q = newton_schulz(g).float()
    s = torch.linalg.svdvals(q)
    assert s.min() > 0.5 and s.max() < 1.5  # Muon's iteration: singular values near, not at, 1
    u, _, vh = torch.linalg.svd(g, full_matrices=False)
    core = u.T @ q @ vh.T  # ≈ diagonal positive: same singular vectors as the exact polar factor
    off = core - torch.diag(torch.diagonal(core))
    assert off.abs().max() < 0.1 and torch.diagonal(core).min() > 0.5
    assert torch.linalg.matrix_norm(q - svd_polar(g), ord=2) < 0.5


def _spd(gen, d, cond=1e3):
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    lam = torch.logspace(0, -torch.log10(torch.tensor(cond)).item(), d, dtype=torch.float64)
    return (q * lam) @ q.T


@pytest.mark.parametrize("d", [4, 30])
def test_eigh_inverse_sqrt_whitens(gen, d):
    s = _spd(gen, d)
    z = inverse_sqrt_eigh(s)
    torch.testing.assert_close(z @ s @ z, torch.eye(d, dtype=s.dtype), atol=1e-8, rtol=0)
    torch.testing.assert_close(z, z.T)


@pytest.mark.parametrize("cond", [10.0, 1e3])
def test_newton_inverse_sqrt_matches_eigh(gen, cond):
    s = _spd(gen, 24, cond)
    torch.testing.assert_close(inverse_sqrt_newton(s, iters=60, tol=1e-12), inverse_sqrt_eigh(s), atol=1e-6, rtol=1e-6)


def test_auto_switches_on_dimension(gen):
    s = _spd(gen, 20, 10.0)
    torch.testing.assert_close(inverse_sqrt(s, "auto", eigh_max_dim=10), inverse_sqrt_newton(s))
    torch.testing.assert_close(inverse_sqrt(s, "auto", eigh_max_dim=20), inverse_sqrt_eigh(s))


def test_bad_inputs():
    with pytest.raises(ValueError, match="g must be a 2-D matrix"):
        newton_schulz(torch.ones(3))
    with pytest.raises(TypeError, match="g must be a torch.Tensor"):
        newton_schulz([[1.0]])
    with pytest.raises(ValueError, match="steps"):
        newton_schulz(torch.ones(2, 2), steps=0)
    with pytest.raises(ValueError, match="sigma must be square"):
        inverse_sqrt(torch.ones(2, 3))
    with pytest.raises(ValueError, match="sigma must be finite"):
        inverse_sqrt(torch.tensor([[1.0, float("nan")], [float("nan"), 1.0]]))
    with pytest.raises(ValueError, match="method"):
        inverse_sqrt(torch.eye(2), method="cholesky")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_newton_schulz_leaves_its_input_alone(gen, dtype):
    g = torch.randn(6, 9, generator=gen).to(dtype)
    before = g.clone()
    newton_schulz(g)
    assert torch.equal(g, before)


def test_float32_eigh_whitens_a_damped_covariance(gen):
    x = torch.randn(400, 64, generator=gen) @ torch.randn(64, 64, generator=gen)
    s = x.T @ x / 400
    s = s + 1e-3 * s.diagonal().mean() * torch.eye(64)
    z = inverse_sqrt_eigh(s)
    assert z.dtype == torch.float32
    ref = inverse_sqrt_eigh(s.double())
    assert float((z.double() - ref).norm() / ref.norm()) < 1e-3
