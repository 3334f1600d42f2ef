import gymnasium as gym
import hierwm  # noqa: F401  (registers the environment)
import numpy as np
from gymnasium.utils.env_checker import check_env
from hierwm.env import EGO_ROW, STEER_GAIN, initial_state, render, simulate


def test_check_env_passes():
    env = gym.make("hierwm/ToyDriving-v0")
    check_env(env.unwrapped)
    obs, info = env.reset(seed=0)
    assert obs.shape == (3, 16, 16) and info["state"].shape == (11,)


def test_counterfactual_actions_move_the_simulated_ego_as_commanded():
    s0 = initial_state(np.random.default_rng(0), 32)
    s0[:, 0] = 8.0
    out = {}
    for steer in (-1.0, 0.0, 0.5):
        acts = np.tile([[steer, 0.0]], (32, 4, 1))
        out[steer] = simulate(s0, acts, None)
    np.testing.assert_allclose(out[0.0][:, 3, 0], 8.0)
    np.testing.assert_allclose(out[0.5][:, 3, 0], 8.0 + 3 * 0.5 * STEER_GAIN)
    np.testing.assert_allclose(out[-1.0][:, 3, 0], 8.0 - 3 * STEER_GAIN)
    # and the raster shows it: the ego's columns follow its state
    f = render(out[-1.0][:, 3])
    cols = np.nonzero(f[0, 2].any(0))[0]
    assert np.isclose(cols.mean() + 0.5, out[-1.0][0, 3, 0], atol=0.5)
    assert f[0, 2].any(1).nonzero()[0].mean() + 0.5 == EGO_ROW


def test_dataset_shapes_and_range():
    from hierwm import make_dataset

    d = make_dataset(5, seed=1, length=8, size=8)
    f, a = d.get_batch([0, 1])
    assert f.shape == (2, 8, 3, 8, 8) and a.shape == (2, 8, 2)
    assert set(f.unique().tolist()) <= {-1.0, 1.0}
    assert d.states.shape == (5, 8, 11)
