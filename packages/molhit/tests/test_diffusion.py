import numpy as np
import pytest
import torch
from molhit import AbsorbingDiffusion, HierarchicalDiffusion, MarginalDiffusion
from scipy import stats

PHI = [0, 0, 1, 1, 1, 2]


def processes():
    return [HierarchicalDiffusion(PHI, T=12), AbsorbingDiffusion(6, T=12),
            MarginalDiffusion(6, T=12, marginal=[5, 1, 1, 2, 3, 4])]


def closed_form(proc, x0, t):
    if isinstance(proc, HierarchicalDiffusion):
        return proc.marginal(x0, t)
    return proc.marginal_probs(x0, t)


@pytest.mark.parametrize("proc", processes(), ids=lambda p: p.name)
def test_cumulative_kernel_matches_closed_form(proc):
    for t in range(proc.T + 1):
        for x0 in range(proc.K):
            np.testing.assert_allclose(proc.Qbar64[t][x0], closed_form(proc, x0, t), atol=1e-10)


def test_hierarchical_kernel_is_alpha_beta_gamma_combination():
    hd = HierarchicalDiffusion(PHI, T=12)
    for t in range(1, hd.T + 1):
        Q = hd.Q64[t]
        assert np.all(Q >= -1e-12) and np.allclose(Q.sum(1), 1)
        a = Q[0, 0]
        g = Q[0, hd.mask_state]
        np.testing.assert_allclose(Q, a * np.eye(hd.num_states) + (1 - a - g) * hd.Q1 + g * hd.Q2, atol=1e-12)
    assert hd.Qbar64[hd.T][:, hd.mask_state].min() == pytest.approx(1.0)  # fully masked at T


@pytest.mark.parametrize("proc", processes(), ids=lambda p: p.name)
@pytest.mark.parametrize("t", [3, 7, 11])
def test_monte_carlo_chain_matches_marginal(proc, t):
    """Run the one-step chain Q_1..Q_t by simulation and chi^2-test against the closed form."""
    gen = torch.Generator().manual_seed(t)
    x0, n = 1, 20000
    x = torch.full((n,), x0)
    for s in range(1, t + 1):
        x = torch.multinomial(proc.Q[s][x], 1, generator=gen).squeeze(1)
    counts = np.bincount(x.numpy(), minlength=proc.num_states)
    p = closed_form(proc, x0, t)
    keep = p > 0
    assert counts[~keep].sum() == 0
    _, pval = stats.chisquare(counts[keep], n * p[keep] / p[keep].sum())
    assert pval > 1e-3


def test_chi2_detects_a_wrong_marginal():
    """The chi^2 check can fail: the chain at t is far from the marginal at t-3."""
    hd = HierarchicalDiffusion(PHI, T=12)
    gen = torch.Generator().manual_seed(0)
    x = torch.full((20000,), 1)
    for s in range(1, 8):
        x = torch.multinomial(hd.Q[s][x], 1, generator=gen).squeeze(1)
    counts = np.bincount(x.numpy(), minlength=hd.num_states)
    p = hd.marginal(1, 4)
    keep = p > 0
    _, pval = stats.chisquare(counts[keep], counts[keep].sum() * p[keep] / p[keep].sum())
    assert pval < 1e-6


@pytest.mark.parametrize("proc", processes(), ids=lambda p: p.name)
def test_posteriors_are_distributions_and_match_bayes(proc):
    gen = torch.Generator().manual_seed(0)
    for t in (1, 5, proc.T):
        x0 = torch.randint(0, proc.K, (64,), generator=gen)
        xt = proc.q_sample(x0, torch.full((64,), t), gen)
        p0 = torch.softmax(torch.randn(64, proc.K, generator=gen), -1)
        post = proc.posterior(xt, p0, t)
        assert torch.all(post >= 0) and torch.allclose(post.sum(-1), torch.ones(64), atol=1e-5)
        # exact x0: brute-force Bayes q(x_{t-1}|x_t,x0) ∝ Q_t[x_{t-1}, x_t] Qbar_{t-1}[x0, x_{t-1}]
        post0 = proc.posterior_x0(xt, x0, t).double().numpy()
        for i in range(8):
            w = proc.Q64[t][:, xt[i]] * proc.Qbar64[t - 1][x0[i]]
            np.testing.assert_allclose(post0[i], w / w.sum(), atol=1e-5)


def test_prior_is_the_mask_for_hierarchical():
    hd = HierarchicalDiffusion(PHI, T=12)
    assert torch.all(hd.prior_sample((50,)) == hd.mask_state)


@pytest.mark.parametrize("kw, match", [({"phi": [0], "T": 5}, "phi"), ({"phi": [0, 1], "T": 0}, "T must")])
def test_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        HierarchicalDiffusion(**kw)


def test_bad_posterior_args():
    hd = HierarchicalDiffusion(PHI, T=12)
    with pytest.raises(ValueError, match="t must"):
        hd.posterior(torch.tensor([0]), torch.ones(1, 6) / 6, 0)
    with pytest.raises(ValueError, match="p0"):
        hd.posterior(torch.tensor([0]), torch.ones(1, 3) / 3, 2)
    with pytest.raises(ValueError, match="marginal"):
        MarginalDiffusion(3, T=4, marginal=[1, -1, 1])
