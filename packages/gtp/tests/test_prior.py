import numpy as np
import pytest
import torch
from gtp import DiffusionPrior
from gtp.experiments import ddim_by_hand_error


def test_schedule_final_alpha_bar_is_near_zero():
    p = DiffusionPrior(3, 1)
    assert p.alpha_bar_final < 1e-3
    assert [int(t) for t in p.ddim.timesteps] == [19, 15, 11, 7, 3]  # starts at T - 1


@pytest.mark.parametrize("prediction_type", ["v_prediction", "epsilon"])
def test_ddim_matches_hand_written_update(prediction_type, rng):
    torch.manual_seed(0)
    p = DiffusionPrior(4, 2, horizon=6, hidden=32, prediction_type=prediction_type)
    assert ddim_by_hand_error(p, rng.normal(size=(5, 4)).astype(np.float32)) < 1e-5


def test_prior_on_planted_bimodal_data_samples_both_modes():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    n, H = 2000, 4
    obs = np.zeros((n, 2), np.float32)
    sign = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    chunks = (0.8 * sign[:, None, None] + 0.05 * np.random.default_rng(0).normal(size=(n, H, 1))).astype(np.float32)
    p = DiffusionPrior(2, 1, horizon=H, hidden=64)
    p.set_stats(obs + np.random.default_rng(1).normal(size=obs.shape) * 1e-3, [-1.0], [1.0])
    p.fit(obs, chunks, steps=1200, generator=g)
    s = p.sample(np.zeros(2, np.float32), 400, generator=g).numpy()[:, :, 0]
    first = s[:, 0]
    assert 0.25 < (first > 0).mean() < 0.75  # both modes
    assert (np.abs(first) < 0.4).mean() < 0.15  # few samples between the modes
    gaussian_mean = chunks[:, 0, 0].mean()  # a Gaussian proposal fitted to the same data
    assert abs(gaussian_mean) < 0.1  # ... centres between the modes, where no datum lies


def test_sample_shapes_and_bad_inputs():
    p = DiffusionPrior(3, 1, horizon=5, hidden=16)
    assert p.sample(np.zeros(3), 4).shape == (4, 5, 1)
    assert p.sample(np.zeros((2, 3)), 4).shape == (2, 4, 5, 1)
    with pytest.raises(ValueError, match="obs must have shape"):
        p.sample(np.zeros(4), 2)
    with pytest.raises(ValueError, match="NaN"):
        p.sample(np.array([0.0, np.nan, 0.0]), 2)
    with pytest.raises(ValueError, match="n must be"):
        p.sample(np.zeros(3), 0)
    with pytest.raises(ValueError, match="horizon"):
        DiffusionPrior(3, 1, horizon=0)
    with pytest.raises(ValueError, match="actions must have shape"):
        p.loss(np.zeros((2, 3)), np.zeros((2, 4, 1)))
