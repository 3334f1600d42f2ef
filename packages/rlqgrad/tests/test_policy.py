import numpy as np
import pytest
import torch
from rlqgrad import HEA, RLQGradOptimizer, UpdatePolicy, meta_train


def test_spectral_norms_at_most_one(policy):
    assert max(policy.spectral_norms()) <= 1 + 1e-3


def test_save_load_roundtrip(policy, tmp_path):
    path = policy.save(tmp_path / "pi.pt")
    pi2 = UpdatePolicy.load(path)
    obs = policy.observe(np.linspace(0, 1, 16), 0.4, 0.6, np.full(16, 0.01), -0.02)
    for a, b in zip(policy.dist_params(obs), pi2.dist_params(obs)):
        torch.testing.assert_close(a, b)
    assert pi2.frozen
    with pytest.raises(FileNotFoundError):
        UpdatePolicy.load(tmp_path / "missing.pt")


def test_constant_cost_variance_stays_at_noise_floor(policy):
    """Every true gradient is 0, yet the update spread stays at or above σ² (by construction)."""
    opt = RLQGradOptimizer(policy, seed=3)
    th, steps = np.zeros(16), []
    for _ in range(300):
        new = opt.step(lambda p: 0.25, th)
        steps.append(new - th)
        th = new
    floor = float(torch.exp(policy.log_std).max()) ** 2
    assert np.var(np.asarray(steps), axis=0, ddof=1).mean() >= 0.8 * floor


def test_full_policy_checks_size_and_bad_config():
    pi = UpdatePolicy(8, hidden=(8,))
    with pytest.raises(ValueError, match="n_params = 8"):
        pi.observe(np.zeros(6), 0.1, 0.5, np.zeros(6), 0.0)
    with pytest.raises(ValueError, match="n_params is required"):
        UpdatePolicy(None)
    with pytest.raises(ValueError, match="hidden"):
        UpdatePolicy(8, hidden=(0,))
    with pytest.raises(ValueError, match="max_step"):
        UpdatePolicy(8, max_step=float("nan"))
    hea = HEA(3, 2)  # 12 parameters: a policy for 8 refuses the task
    with pytest.raises(ValueError, match="n_params = 8"):
        meta_train(pi, [hea.cost(np.zeros((4, 3)), np.ones(4))], total_steps=64)
    with pytest.raises(ValueError, match="total_steps"):
        meta_train(pi, [HEA(2, 2).cost(np.zeros((4, 2)), np.ones(4))], total_steps=0)
