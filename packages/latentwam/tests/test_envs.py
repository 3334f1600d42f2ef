import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from latentwam import evaluate
from latentwam.envs import make


@pytest.mark.parametrize("env_id", ["latentwam/Intercept-v0", "latentwam/Reach-v0"])
def test_check_env(env_id):
    check_env(gym.make(env_id, render_mode="rgb_array").unwrapped)


def test_expert_intercepts_and_random_does_not():
    expert = evaluate("latentwam/Intercept-v0", "expert", episodes=100, seed=0)["success"]
    rand = evaluate("latentwam/Intercept-v0", "random", episodes=100, seed=0)["success"]
    assert expert >= 0.95
    assert rand < expert / 2


def test_action_outside_the_space_is_an_error():
    env = make("latentwam/Intercept-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action space"):
        env.step(np.array([1.5, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3))


def test_evaluate_rejects_bad_policies():
    with pytest.raises(ValueError, match="chunk"):
        evaluate("latentwam/Intercept-v0", lambda f, p: np.zeros((len(f), 2)), episodes=2)
    with pytest.raises(ValueError, match="env_id"):
        evaluate("latentwam/Nope-v0", "expert", episodes=2)
    with pytest.raises(ValueError, match="policy"):
        evaluate("latentwam/Intercept-v0", "oracle", episodes=2)
