import math

import numpy as np
import pytest
import torch
from meanfieldsteer import LinearReward, MeanFieldSampler, MeanReward, MMDReward, WeightedParticles, solve_tilt_1d
from meanfieldsteer.rewards import MeasureReward
from meanfieldsteer.sampler import residual_resample, systematic_resample


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def r_fn(z):
    return -0.5 * (z[:, 0] - 1.0) ** 2


def independent_pointwise_fk(gm, r, n, steps, seed, t_min=1e-3):
    """Pointwise FK steering written from scratch: Euler–Maruyama with the ∇(κ r) drift, weights by the
    telescoping potential κ r and the Girsanov ratio of the steered to the unsteered kernel."""
    g = gen(seed)
    sch = gm.schedule
    ts = np.linspace(1.0, t_min, steps + 1)
    x = torch.randn(n, 1, generator=g, dtype=torch.float64)
    logw = torch.zeros(n, dtype=torch.float64)
    pot_old, kap_old = torch.zeros(n, dtype=torch.float64), 0.0
    out = []
    for k in range(steps):
        t, t1 = float(ts[k]), float(ts[k + 1])
        dt, beta = t - t1, sch.beta(t)
        xg = x.clone().requires_grad_(True)
        (gr,) = torch.autograd.grad(r(xg).sum(), xg)
        u = beta * kap_old * gr
        xi = math.sqrt(beta * dt) * torch.randn(n, 1, generator=g, dtype=torch.float64)
        x = x + (0.5 * beta * x + beta * gm.score(x, t) + u) * dt + xi
        kap = sch.alpha(t1) ** 2
        pot = kap * r(x)
        logw = logw + pot - pot_old - (u * xi).sum(1) / beta - (u * u).sum(1) * dt / (2 * beta)
        logw = logw - torch.logsumexp(logw, 0)
        pot_old, kap_old = pot, kap
        out.append(logw.clone())
    return x, out


def test_linear_reward_reproduces_independent_pointwise_fk_step_for_step(gmm1d):
    """Claim 3: R = ∫ r dμ (Ψ = r) is pointwise FK steering."""
    steps = 25
    s = MeanFieldSampler(gmm1d, LinearReward(r_fn), n_steps=steps, resample=None)
    s.sample(64, 1, generator=gen(5), record=True)
    x_ref, lw_ref = independent_pointwise_fk(gmm1d, r_fn, 64, steps, 5)
    lw = torch.zeros(64, dtype=torch.float64)
    for k, rec in enumerate(s.trace):
        lw = lw + rec["increment"]
        lw = lw - torch.logsumexp(lw, 0)
        np.testing.assert_allclose(lw.numpy(), lw_ref[k].numpy(), atol=1e-9)


def test_weights_accumulate_without_resampling(gmm1d):
    """#12: the final log-weights are the sum of every step's increment (not the last potential)."""
    s = MeanFieldSampler(gmm1d, MMDReward(torch.tensor([[-2.0], [-1.5], [2.0]]), lam=5.0), n_steps=20, resample=None)
    wp = s.sample(64, 1, generator=gen(1), record=True)
    total = sum(rec["increment"] for rec in s.trace)
    np.testing.assert_allclose(torch.softmax(total, 0).numpy(), wp.weights.numpy(), atol=1e-9)
    last = s.trace[-1]["increment"]
    assert float((torch.softmax(last, 0) - wp.weights).abs().max()) > 1e-3  # overwriting would differ


def test_adaptive_resampling_accumulates_between_resamplings(gmm1d):
    s = MeanFieldSampler(gmm1d, LinearReward(lambda z: -2.0 * (z[:, 0] + 2.0) ** 2), n_steps=40, ess_threshold=0.5)
    wp = s.sample(128, 1, generator=gen(2), record=True)
    flags = [rec["resampled"] for rec in s.trace]
    assert any(flags)
    last = max(i for i, f in enumerate(flags) if f)
    acc = sum(rec["increment"] for rec in s.trace[last + 1 :]) if last + 1 < len(flags) else torch.zeros(128)
    if last + 1 < len(flags):
        np.testing.assert_allclose(torch.softmax(acc, 0).numpy(), wp.weights.numpy(), atol=1e-9)
    # a threshold below every ESS never resamples and gives the weights-only run exactly
    a = MeanFieldSampler(gmm1d, LinearReward(r_fn), n_steps=15, ess_threshold=1e-6).sample(32, 1, generator=gen(3))
    b = MeanFieldSampler(gmm1d, LinearReward(r_fn), n_steps=15, resample=None).sample(32, 1, generator=gen(3))
    assert torch.equal(a.log_weights, b.log_weights)


def test_weights_only_and_resampled_agree_in_expectation(gmm1d):
    """The weighted mean of pointwise-tilted samples, averaged over seeds, is the same with and without
    resampling and matches the grid solution."""
    grid = np.linspace(-6, 6, 1500)
    lp = gmm1d.log_prob(torch.as_tensor(grid)[:, None]).numpy()
    rew = LinearReward(lambda z: -0.4 * (z[:, 0] + 1.0) ** 2)
    dens = solve_tilt_1d(lp, rew, grid)
    target = float(np.sum(grid * dens) * (grid[1] - grid[0]))
    means = {}
    for res in (None, "systematic", "residual"):
        vals = []
        for seed in range(6):
            wp = MeanFieldSampler(gmm1d, rew, n_steps=40, resample=res, ess_threshold=0.9).sample(
                256, 1, generator=gen(100 + seed)
            )
            vals.append(float(wp.mean()[0]))
        means[res] = np.mean(vals)
    for v in means.values():
        assert abs(v - target) < 0.12, (means, target)
    assert abs(means[None] - means["systematic"]) < 0.12


@pytest.mark.slow
def test_meanfield_mode_mass_beats_gradient_and_kfp0(gmm1d):
    """A small Exp 1: mean-field FK's left-mode mass matches μ*'s; gradient-only's and K_FP = 0's do not."""
    from meanfieldsteer.experiments import exp1_problem
    from meanfieldsteer.metrics import left_mass

    _, nu, grid, lp = exp1_problem(grid_points=600)
    r = MMDReward(nu, lam=5.0)
    dens = solve_tilt_1d(lp, r, grid)
    star = float(dens[grid < 0].sum() * (grid[1] - grid[0]))
    mass = {}
    for name, kw in {"mf": {"k_fp": 3}, "k0": {"k_fp": 0}, "grad": {"mode": "gradient"}}.items():
        mass[name] = left_mass(
            MeanFieldSampler(gmm1d, r, n_steps=50, **kw).sample(256, 1, generator=gen(0), dtype=torch.float32)
        )
    assert abs(mass["mf"] - star) < 0.05
    assert abs(mass["grad"] - star) > abs(mass["mf"] - star)
    assert abs(mass["k0"] - star) > abs(mass["mf"] - star)


def test_linear_psi_dot_matches_picard_and_is_limited(gmm1d):
    r = MeanReward([-1.0], lam=2.0)
    a = MeanFieldSampler(gmm1d, r, n_steps=30, psi_dot="linear", resample=None).sample(64, 1, generator=gen(0))
    b = MeanFieldSampler(gmm1d, r, n_steps=30, k_fp=30, resample=None).sample(64, 1, generator=gen(0))
    np.testing.assert_allclose(a.weights.numpy(), b.weights.numpy(), atol=5e-3)  # exact only to first order
    with pytest.raises(ValueError, match="linear_max_n"):
        MeanFieldSampler(gmm1d, r, psi_dot="linear", linear_max_n=16).sample(17, 1)


def test_resamplers_keep_proportions():
    w = torch.rand(50, generator=gen(0), dtype=torch.float64) ** 3
    w = w / w.sum()
    for fn in (systematic_resample, residual_resample):
        idx = fn(w, gen(1))
        assert idx.shape == (50,)
        counts = torch.bincount(idx, minlength=50).double()
        assert bool((counts >= torch.floor(50 * w)).all())
        if fn is systematic_resample:
            assert bool((counts <= torch.ceil(50 * w)).all())


class _BadShape(MeasureReward):
    def value(self, particles):
        return torch.tensor(0.0)

    def prepare(self, y, x):
        return lambda w: torch.zeros(y.shape[0], 1, dtype=y.dtype)


class _NaNAt(MeasureReward):
    def value(self, particles):
        return torch.tensor(0.0)

    def prepare(self, y, x):
        return lambda w: (y[:, 0] * 0.0 + float("nan")) if self.calls_left() else y[:, 0] * 0.0

    def __init__(self, after):
        self.n = after

    def calls_left(self):
        self.n -= 1
        return self.n < 0


def test_bad_inputs(gmm1d):
    r = LinearReward(r_fn)
    for kw, match in [
        ({"ess_threshold": 0.0}, "ess_threshold"),
        ({"ess_threshold": 1.5}, "ess_threshold"),
        ({"k_fp": -1}, "k_fp"),
        ({"mode": "x"}, "mode"),
        ({"psi_dot": "newton"}, "psi_dot"),
        ({"resample": "stratified"}, "resample"),
        ({"n_steps": "200"}, "n_steps"),
        ({"damping": 2.0}, "damping"),
    ]:
        with pytest.raises((ValueError, TypeError), match=match):
            MeanFieldSampler(gmm1d, r, **kw)
    with pytest.raises(ValueError, match="n_particles"):
        MeanFieldSampler(gmm1d, r).sample(1, 1)
    with pytest.raises(TypeError, match="score_fn"):
        MeanFieldSampler(3, r)
    with pytest.raises(TypeError, match="reward"):
        MeanFieldSampler(gmm1d, lambda x: x)
    with pytest.raises(FloatingPointError, match="step 0"):
        MeanFieldSampler(lambda x, t: x * float("nan"), r, n_steps=3).sample(8, 1)
    with pytest.raises(ValueError, match="shape"):
        MeanFieldSampler(lambda x, t: x[:, :1], r, n_steps=3).sample(8, 2)
    with pytest.raises(ValueError, match="first variation must have shape"):
        MeanFieldSampler(gmm1d, _BadShape(), n_steps=3).sample(8, 1)
    with pytest.raises(FloatingPointError, match=r"log-weights at step \d+"):
        MeanFieldSampler(gmm1d, _NaNAt(9), n_steps=10, k_fp=0, resample=None).sample(8, 1)
    assert isinstance(MeanFieldSampler(gmm1d, None, n_steps=3).sample(8, 1), WeightedParticles)
