import gymnasium as gym
import numpy as np
import pytest
from gtp.envs import GOAL, GOAL_RADIUS, in_wall, waypoint_controller
from gymnasium.utils.env_checker import check_env


def test_registered_env_passes_check_env():
    env = gym.make("gtp/TwoCorridorMaze-v0")
    check_env(env.unwrapped, skip_render_check=True)
    assert env.spec.max_episode_steps == 200


@pytest.mark.parametrize("side", [-1.0, 1.0])
def test_scripted_controller_reaches_goal_through_each_corridor(side):
    env = gym.make("gtp/TwoCorridorMaze-v0")
    o, _ = env.reset(seed=3)
    xs, total = [], 0.0
    for _ in range(200):
        o, r, term, trunc, info = env.step(waypoint_controller(o, side)[0].astype(np.float32))
        total += r
        if abs(o[1]) < 0.5:
            xs.append(o[0])
        if term or trunc:
            break
    assert term and info["is_success"] and total == 1.0
    assert np.linalg.norm(o[:2] - GOAL) < GOAL_RADIUS
    assert np.sign(np.mean(xs)) == side  # it went through the corridor on that side


def test_straight_line_hits_the_wall():
    env = gym.make("gtp/TwoCorridorMaze-v0")
    o, _ = env.reset(seed=0)
    for _ in range(200):
        o, r, term, trunc, _ = env.step(np.array([0.0, 1.0], np.float32))
        assert not in_wall(o[:2])
        if term or trunc:
            break
    assert not term and o[1] < -0.45  # stuck below the wall: a mean of the two routes fails


def test_bad_action_shape():
    env = gym.make("gtp/TwoCorridorMaze-v0").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must have shape"):
        env.step(np.zeros(3))
