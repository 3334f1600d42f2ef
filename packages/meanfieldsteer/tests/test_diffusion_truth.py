import numpy as np
import pytest
import torch
from meanfieldsteer import GaussianMixture, MeanReward, MMDReward, WeightedParticles, gaussian_mean_tilt, solve_tilt_1d
from meanfieldsteer.ground_truth import fixed_point_residual


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("schedule", ["linear", "cosine", "constant"])
def test_mixture_score_is_autograd_of_log_density(dtype, schedule):
    w = np.array([0.3, 0.7], dtype=dtype)
    m = np.array([[-1.0, 0.5], [2.0, -1.0]], dtype=dtype)
    c = np.array([[[0.5, 0.1], [0.1, 0.8]], [[1.2, -0.3], [-0.3, 0.4]]], dtype=dtype)
    gm = GaussianMixture(w, m, c, schedule=schedule)
    x = torch.randn(30, 2, generator=torch.Generator().manual_seed(0)).to(torch.from_numpy(m).dtype)
    for t in (0.0, 0.3, 0.9):
        xg = x.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(gm.log_prob(xg, t).sum(), xg)
        tol = 1e-9 if dtype == np.float64 else 1e-4
        np.testing.assert_allclose(gm.score(x, t).numpy(), g.numpy(), rtol=tol, atol=tol)


def test_mixture_takes_torch_and_saves(tmp_path):
    gm = GaussianMixture(
        torch.tensor([1.0, 3.0]), torch.tensor([[0.0], [1.0]]), torch.tensor([0.5, 2.0]), schedule="cosine"
    )
    p = gm.save(tmp_path / "gm.npz")
    gm2 = GaussianMixture.load(p)
    x = torch.linspace(-2, 2, 9)[:, None]
    assert gm2.schedule.name == "cosine"
    np.testing.assert_allclose(gm2.score(x, 0.4), gm.score(x, 0.4))
    with pytest.raises(FileNotFoundError):
        GaussianMixture.load(tmp_path / "none.npz")


def test_mixture_bad_inputs():
    with pytest.raises(ValueError, match="covs"):
        GaussianMixture([1.0], [[0.0, 0.0]], [[[1.0, 2.0], [2.0, 1.0]]])
    with pytest.raises(ValueError, match="weights"):
        GaussianMixture([1.0, -1.0], [[0.0], [1.0]], [1.0, 1.0])
    with pytest.raises(TypeError, match="means"):
        GaussianMixture([1.0], "abc", [1.0])
    with pytest.raises(ValueError, match="schedule"):
        GaussianMixture([1.0], [[0.0]], [1.0], schedule="quadratic")


def test_grid_solver_meets_gaussian_closed_form():
    grid = np.linspace(-8, 8, 2000)
    dens, info = solve_tilt_1d(
        lambda g: -0.5 * (g - 0.5) ** 2 / 1.5, MeanReward([2.0], lam=3.0), grid, return_info=True
    )
    m, c = gaussian_mean_tilt([0.5], [[1.5]], [2.0], 3.0)
    dx = grid[1] - grid[0]
    mean = np.sum(grid * dens) * dx
    var = np.sum((grid - mean) ** 2 * dens) * dx
    assert info["residual"] < 1e-8
    assert abs(mean - m[0]) < 1e-6 and abs(var - c[0, 0]) < 1e-5
    # closed form by hand: (1 + λC)⁻¹(m0 + λ C m*)
    assert abs(m[0] - (0.5 + 3 * 1.5 * 2.0) / (1 + 3 * 1.5)) < 1e-12


def test_grid_solver_meets_its_fixed_point_mmd(gmm1d):
    grid = np.linspace(-6, 6, 800)
    lp = gmm1d.log_prob(torch.as_tensor(grid)[:, None]).numpy()
    nu = GaussianMixture([0.75, 0.25], [[-2.0], [2.0]], [0.25, 0.25]).sample(300, generator=torch.Generator())
    r = MMDReward(nu, lam=10.0)
    dens = solve_tilt_1d(lp, r, grid)
    assert fixed_point_residual(lp, r, grid, dens) < 1e-6
    assert abs(dens.sum() * (grid[1] - grid[0]) - 1) < 1e-10
    # the tilt moves mass toward ν's heavy left mode
    assert dens[grid < 0].sum() * (grid[1] - grid[0]) > 0.4


def test_grid_solver_bad_inputs(gmm1d):
    r = MeanReward([0.0], lam=1.0)
    with pytest.raises(ValueError, match="grid"):
        solve_tilt_1d(lambda g: -g * g, r, np.array([0.0, 1.0, 0.5, 2.0]))
    with pytest.raises(ValueError, match="logp"):
        solve_tilt_1d(np.zeros(3), r, np.linspace(0, 1, 10))
    with pytest.raises(TypeError, match="reward"):
        solve_tilt_1d(lambda g: -g * g, None, np.linspace(0, 1, 10))
    with pytest.raises(ValueError, match="lam"):
        gaussian_mean_tilt([0.0], [[1.0]], [1.0], -1.0)


def test_weighted_particles_roundtrip(tmp_path):
    wp = WeightedParticles(torch.randn(5, 2), torch.randn(5))
    wp2 = WeightedParticles.load(wp.save(tmp_path / "p.npz"))
    assert torch.equal(wp.x, wp2.x) and torch.equal(wp.log_weights, wp2.log_weights)
    assert 1 <= wp.ess <= 5 and abs(float(wp.weights.sum()) - 1) < 1e-6
