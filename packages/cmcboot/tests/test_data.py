import numpy as np
import pytest
from cmcboot import ModelBootstrap, RiverSwimEnv, riverswim, riverswim_behaviours, rollout, simulate_datasets
from cmcboot.data import RewardSwitchingBehaviour, TimeSwitchingBehaviour


def test_simulated_data_sets_are_paths(rng):
    P, _ = riverswim(6)
    d = simulate_datasets(P, riverswim_behaviours(6)["mostly_right"], n_datasets=3, n_episodes=4, length=50,
                          initial=np.ones(6) / 6, rng=rng)
    assert d.shape == (3, 4, 50, 3)
    assert np.all(d[..., 1:, 0] == d[..., :-1, 2])
    assert np.all(P[d[..., 0], d[..., 1], d[..., 2]] > 0)


def test_history_behaviour_switches_after_the_rewards(rng):
    beh = riverswim_behaviours(4, bias=0.9)["history"]
    assert isinstance(beh, RewardSwitchingBehaviour)
    mem = beh.start(2)
    mem = beh.update(mem, np.array([3, 1]), np.array([1, 1]), np.array([3, 2]), 0)
    assert mem.tolist() == [1, 0]                      # the large reward switches to mostly-left
    acts = beh.act(np.full(2000, 2), 0, np.ones(2000, int), rng.random(2000))
    assert abs((acts == 0).mean() - 0.9) < 0.03
    mem = beh.update(np.array([1]), np.array([0]), np.array([0]), np.array([0]), 5)
    assert mem.tolist() == [0]                         # the small reward switches back


def test_time_switching_behaviour(rng):
    beh = TimeSwitchingBehaviour(np.tile([1.0, 0.0], (3, 1)), np.tile([0.0, 1.0], (3, 1)), t_switch=5)
    s = np.zeros(10, int)
    assert np.all(beh.act(s, 4, None, rng.random(10)) == 0) and np.all(beh.act(s, 5, None, rng.random(10)) == 1)


def test_rollout_of_the_gymnasium_env_feeds_the_bootstrap():
    env = RiverSwimEnv(n_states=5, variant="psrl")
    traj = rollout(env, np.full((5, 2), 0.5), 400, seed=0)
    assert traj.shape == (400, 4)
    assert np.all(traj[1:, 0] == traj[:-1, 2])
    np.testing.assert_allclose(traj[:, 3], env.R[traj[:, 0].astype(int), traj[:, 1].astype(int)])
    mb = ModelBootstrap(n_boot=20, seed=0).fit(traj)
    lo, hi = mb.interval("V", policy=np.full((mb.n_states_, 2), 0.5), gamma=0.5)
    assert np.all(lo <= hi)


def test_bad_behaviour_bias():
    with pytest.raises(ValueError, match="bias"):
        riverswim_behaviours(6, bias=1.0)
