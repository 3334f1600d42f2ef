import gymnasium as gym
import numpy as np
import occirl  # noqa: F401  (registers the environments)
import pytest
from gymnasium.utils.env_checker import check_env


@pytest.mark.parametrize("eid,kw", [
    ("occirl/GridWorld-v0", {"n": 4, "slip": 0.2}),
    ("occirl/Garnet-v0", {"n_states": 12, "n_actions": 3, "branching": 4, "seed": 3}),
    ("occirl/TabularMDP-v0", {"P": np.full((3, 2, 3), 1 / 3), "R": np.arange(6.0).reshape(3, 2), "gamma": 0.9,
                              "p0": np.array([1.0, 0, 0])}),
])
def test_check_env_and_seals_attributes(eid, kw):
    env = gym.make(eid, **kw)
    check_env(env.unwrapped)
    u = env.unwrapped
    S, A = u.state_dim, u.n_actions
    assert u.transition_matrix.shape == (S, A, S)
    np.testing.assert_allclose(u.transition_matrix.sum(-1), 1.0)
    assert u.initial_state_dist.shape == (S,) and u.observation_matrix.shape == (S, u.obs_dim)
    assert u.horizon >= 1 and u.action_dim == A
    obs, _ = env.reset(seed=0)
    assert 0 <= obs < S
    obs, rew, term, trunc, _ = env.step(0)
    assert 0 <= obs < S and isinstance(rew, float)


def test_gridworld_slip_moves():
    from occirl.envs import gridworld_mdp

    P = gridworld_mdp(3, 0.2)
    # from the centre, "up" goes up with 0.8 + 0.2/4, each other neighbour 0.05
    assert P[4, 0, 1] == pytest.approx(0.85)
    assert P[4, 0, 7] == pytest.approx(0.05)


def test_tabular_env_bad_input():
    with pytest.raises(ValueError, match="P rows must sum to 1"):
        gym.make("occirl/TabularMDP-v0", P=np.full((3, 2, 3), 0.5), R=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="reward must have shape"):
        gym.make("occirl/TabularMDP-v0", P=np.full((3, 2, 3), 1 / 3), R=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="gamma"):
        gym.make("occirl/TabularMDP-v0", P=np.full((3, 2, 3), 1 / 3), R=np.zeros((3, 2)), gamma=1.5)
