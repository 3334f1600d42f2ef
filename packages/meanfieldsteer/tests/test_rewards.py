"""Each first variation against finite differences of R((1−ε)μ + εδ_y), with unequal weights."""

import numpy as np
import pytest
import torch
from meanfieldsteer import KDEEntropyReward, LinearReward, MeanReward, MMDReward, WeightedParticles

G = torch.Generator().manual_seed(0)
X = torch.randn(12, 2, dtype=torch.float64, generator=G)
W = torch.rand(12, dtype=torch.float64, generator=G) + 0.1
Y = torch.randn(4, 2, dtype=torch.float64, generator=G)
REWARDS = {
    "linear": LinearReward(lambda z: torch.sin(z[:, 0]) + z[:, 1] ** 2),
    "mean": MeanReward([1.0, -0.5], lam=3.0),
    "mmd": MMDReward(torch.randn(20, 2, dtype=torch.float64, generator=G) + 1.0, lam=7.0, bandwidth=0.8),
    "kde": KDEEntropyReward(lam=2.0, bandwidth=0.6),
}


@pytest.mark.parametrize("name", list(REWARDS))
def test_first_variation_matches_finite_differences(name):
    r = REWARDS[name]
    mu = WeightedParticles.from_weights(X, W)
    psi_y = r.first_variation(Y, mu)
    centre = float(mu.weights @ r.first_variation(X, mu))
    eps = 1e-6
    for i in range(Y.shape[0]):
        xe = torch.cat([X, Y[i : i + 1]])

        def R(e, xe=xe):
            w = torch.cat([(1 - e) * mu.weights, torch.tensor([e], dtype=torch.float64)])
            return float(r.value(WeightedParticles.from_weights(xe, w.clamp_min(1e-300))))

        fd = (R(eps) - R(0.0)) / eps  # one-sided: e ≥ 0 keeps a measure
        np.testing.assert_allclose(fd, float(psi_y[i]) - centre, rtol=1e-4, atol=1e-4)


def test_sign_and_scale_of_lambda():
    """λ multiplies half the squared discrepancy: R = −(λ/2)‖m − m*‖², Ψ = −λ (m − m*)·y."""
    mu = WeightedParticles.from_weights(X, W)
    r1, r2 = MeanReward([1.0, -0.5], lam=1.0), MeanReward([1.0, -0.5], lam=2.0)
    m = mu.mean()
    np.testing.assert_allclose(float(r1.value(mu)), -0.5 * float(((m - torch.tensor([1.0, -0.5])) ** 2).sum()))
    np.testing.assert_allclose(r2.first_variation(Y, mu), 2 * r1.first_variation(Y, mu))
    # moving mass toward m* raises R: the first variation is larger on the side of m*
    mmd = REWARDS["mmd"]
    assert float(mmd.value(mu)) < 0


def test_mmd_matches_pot_free_formula():
    """MMD² of two point sets equals the plain double sum."""
    a = torch.randn(5, 1, dtype=torch.float64, generator=G)
    b = torch.randn(7, 1, dtype=torch.float64, generator=G)
    r = MMDReward(b, lam=2.0, bandwidth=1.3)
    k = lambda u, v: np.exp(-((u - v.T) ** 2) / (2 * 1.3**2))  # noqa: E731
    an, bn = a.numpy(), b.numpy()
    want = k(an, an).mean() - 2 * k(an, bn).mean() + k(bn, bn).mean()
    np.testing.assert_allclose(float(r.mmd2(a)), want, rtol=1e-10)


def test_grad_first_variation_is_autograd_of_psi():
    mu = WeightedParticles.from_weights(X, W)
    r = REWARDS["mmd"]
    g = r.grad_first_variation(Y, mu)
    h = 1e-6
    e = torch.tensor([[h, 0.0]], dtype=torch.float64)
    fd = (r.first_variation(Y + e, mu) - r.first_variation(Y - e, mu)) / (2 * h)
    np.testing.assert_allclose(g[:, 0], fd, rtol=1e-5, atol=1e-8)


def test_bad_inputs():
    with pytest.raises(ValueError, match="lam"):
        MeanReward([0.0], lam=float("nan"))
    with pytest.raises(TypeError, match="lam"):
        MMDReward(X, lam="5")
    with pytest.raises(ValueError, match="bandwidth"):
        MMDReward(X, lam=1.0, bandwidth=0.0)
    with pytest.raises(ValueError, match="target"):
        MMDReward(torch.tensor([[0.0], [float("inf")]]), lam=1.0)
    with pytest.raises(TypeError, match="r must"):
        LinearReward(3.0)
    with pytest.raises(ValueError, match="r must map"):
        LinearReward(lambda z: z).first_variation(Y, X)
    with pytest.raises(ValueError, match="dimension"):
        MeanReward([0.0, 1.0, 2.0], lam=1.0).value(X)
    with pytest.raises(ValueError, match="x must"):
        REWARDS["mmd"].first_variation(torch.zeros(3), X)
    with pytest.raises(ValueError, match="log_weights"):
        WeightedParticles(X, torch.full((12,), float("nan")))
