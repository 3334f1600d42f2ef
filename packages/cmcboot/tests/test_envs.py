import gymnasium as gym
import numpy as np
import pytest
from cmcboot import FiniteMDPEnv, RiverSwimEnv, riverswim
from cmcboot.envs import VARIANTS
from gymnasium.utils.env_checker import check_env


def test_riverswim_passes_gymnasium_checker():
    check_env(gym.make("cmcboot/RiverSwim-v0", n_states=6).unwrapped, skip_render_check=True)


def test_finite_mdp_passes_gymnasium_checker(small_mdp):
    P, R = small_mdp
    check_env(gym.make("cmcboot/FiniteMDP-v0", P=P, R=R, initial=np.ones(3) / 3).unwrapped, skip_render_check=True)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("n_states", [2, 6, 20])
def test_riverswim_kernel_is_stochastic(variant, n_states):
    P, R = riverswim(n_states, variant=variant)
    np.testing.assert_allclose(P.sum(-1), 1.0)
    assert R[0, 0] == VARIANTS[variant]["small_reward"] and R[-1, 1] == VARIANTS[variant]["large_reward"]
    assert np.count_nonzero(R) == 2
    # left is deterministic, right never jumps more than one cell
    assert np.all(P[:, 0].max(-1) == 1.0)
    i, j = np.nonzero(P[:, 1])
    assert np.all(np.abs(i - j) <= 1)


def test_riverswim_swim_probabilities_and_current():
    P, _ = riverswim(5, swim_probs=(0.1, 0.5, 0.4))
    np.testing.assert_allclose(P[2, 1, [1, 2, 3]], [0.1, 0.5, 0.4])
    P, _ = riverswim(5, swim_probs=(0.1, 0.5, 0.4), current=False)
    np.testing.assert_allclose(P[2, 1, [1, 2, 3]], [0.0, 0.6, 0.4])


def test_env_steps_follow_the_kernel(rng):
    env = RiverSwimEnv(n_states=3)
    env.reset(seed=0)
    nxt = []
    for _ in range(4000):
        env._state = 1
        nxt.append(env.step(1)[0])
    freq = np.bincount(nxt, minlength=3) / len(nxt)
    np.testing.assert_allclose(freq, env.P[1, 1], atol=0.03)


@pytest.mark.parametrize("kwargs", [{"n_states": 1}, {"variant": "nope"}, {"swim_probs": (0.5, 0.5, 0.5)}])
def test_riverswim_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        riverswim(**kwargs)


def test_finite_mdp_rejects_bad_kernel():
    with pytest.raises(ValueError, match="P"):
        FiniteMDPEnv(np.ones((2, 2, 2)), np.zeros((2, 2)))
