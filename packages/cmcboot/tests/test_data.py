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


# users' data ------------------------------------------------------------------------------------

def test_from_arrays_any_numeric_dtype_and_episodes():
    from cmcboot import from_arrays

    s = np.array([0, 1, 1, 2, 0, 1], dtype=np.float32)
    a = np.array([1, 1, 0, 0, 1, 0], dtype=np.uint8)
    s2 = [1, 1, 2, 2, 1, 0]
    trajs = from_arrays(s, a, s2, rewards=np.arange(6, dtype=np.float16), episodes=["x", "x", "x", "x", "y", "y"],
                        n_states=3, n_actions=2)
    assert [t.shape for t in trajs] == [(4, 4), (2, 4)]
    assert trajs[1][:, :3].tolist() == [[0, 1, 1], [1, 0, 0]] and trajs[1][:, 3].tolist() == [4.0, 5.0]
    mb = ModelBootstrap(regime="episodic", n_boot=10, seed=0, n_states=3, n_actions=2).fit(trajs)
    assert mb.counts_.sum() == 6


@pytest.mark.parametrize("kwargs, err, match", [
    ({"states": [0, 1.5, 1]}, ValueError, r"states\[1\] = 1.5 is not an integer"),
    ({"states": [0, -1, 1]}, ValueError, r"states\[1\] = -1 is negative"),
    ({"next_states": [1, 1, 3]}, ValueError, r"next_states\[2\] = 3 is out of range: n_states=3"),
    ({"actions": [0, 2, 0]}, ValueError, r"actions\[1\] = 2 is out of range: n_actions=2"),
    ({"actions": [True, False, True]}, TypeError, "actions must hold integers"),
    ({"states": [0, 1]}, ValueError, "one length"),
    ({"next_states": [1, 2, 2]}, ValueError, r"not a path: next_states\[1\] = 2 but states\[2\] = 1"),
    ({"rewards": [0.0, np.nan, 1.0]}, ValueError, r"rewards\[1\] is not finite"),
    ({"states": [[0, 1, 1]]}, ValueError, "1-D"),
])
def test_from_arrays_names_the_bad_entry(kwargs, err, match):
    from cmcboot import from_arrays

    args = {"states": [0, 1, 1], "actions": [1, 0, 1], "next_states": [1, 1, 2], **kwargs}
    with pytest.raises(err, match=match):
        from_arrays(args.pop("states"), args.pop("actions"), args.pop("next_states"), n_states=3, n_actions=2, **args)


def test_csv_bad_rows_are_skipped_with_line_numbers_and_split_the_trajectory(tmp_path):
    from cmcboot.data import load_trajectories

    path = tmp_path / "t.csv"
    path.write_text("s,a,s_next,r\n0,1,1,0\n1,1,2,0\n2,x,2,0\n2,0,1,0.5\n1,1,9,0\n1,0,0,\n0,1,1,1\n")
    traj, report = load_trajectories(path, columns={"state": "s", "action": "a", "next_state": "s_next",
                                                    "reward": "r"}, n_states=3, n_actions=2)
    assert [(line, why.split(" ")[0]) for line, why in report["skipped"]] == [(4, "not"), (6, "s_next"), (7, "r")]
    assert report["rows"] == 7 and report["trajectories"] == len(traj) == 3
    assert [t[:, :3].astype(int).tolist() for t in traj] == [[[0, 1, 1], [1, 1, 2]], [[2, 0, 1]], [[0, 1, 1]]]


def test_npz_columns_and_errors(tmp_path):
    from cmcboot.data import load_trajectories

    np.savez(tmp_path / "t.npz", obs=np.array([0, 1, 1]), act=np.array([1, 1, 0]), nxt=np.array([1, 1, 0]))
    traj, report = load_trajectories(tmp_path / "t.npz", columns={"state": "obs", "action": "act", "next_state": "nxt"},
                                     n_states=2, n_actions=2)
    assert len(traj) == 1 and traj[0].tolist() == [[0, 1, 1], [1, 1, 1], [1, 0, 0]] and report["skipped"] == []
    with pytest.raises(ValueError, match=r"arrays \['state'\] not found"):
        load_trajectories(tmp_path / "t.npz", columns={"action": "act", "next_state": "nxt"})
    with pytest.raises(ValueError, match=".npz or .csv"):
        load_trajectories(tmp_path / "t.txt")
    with pytest.raises(FileNotFoundError, match="data.path"):
        load_trajectories(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="unknown roles"):
        load_trajectories(tmp_path / "t.npz", columns={"obs": "obs"})
