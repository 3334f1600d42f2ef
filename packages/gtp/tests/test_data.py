import numpy as np
import pytest
from gtp import fit_models, load_dataset
from gtp.data import action_chunks, save_dataset


def test_missing_keys_and_mismatched_lengths(pendulum_data):
    d = {k: v for k, v in pendulum_data.items() if k != "rewards"}
    with pytest.raises(ValueError, match="missing keys"):
        load_dataset(d)
    d = dict(pendulum_data, rewards=pendulum_data["rewards"][:-3])
    with pytest.raises(ValueError, match="mismatched lengths"):
        load_dataset(d)
    with pytest.raises(TypeError, match="dict of arrays"):
        load_dataset(42)


def test_non_finite_transitions_are_skipped_and_counted(pendulum_data, tmp_path, caplog):
    d = {k: v.copy() for k, v in pendulum_data.items()}
    d["observations"][5, 1] = np.nan
    d["rewards"][7] = np.inf
    path = save_dataset(d, tmp_path / "data.npz")
    with caplog.at_level("WARNING"):
        clean = load_dataset(path)
    assert int(clean["skipped"]) == 2 and len(clean["rewards"]) == len(d["rewards"]) - 2
    assert "skipped 2" in caplog.text and "[5, 7]" in caplog.text
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "nope.npz")
    np.savez(tmp_path / "bad.npz", observations=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="missing keys"):
        fit_models(tmp_path / "bad.npz")


def test_action_chunks_stay_in_episode():
    obs = np.arange(6, dtype=np.float32)[:, None]
    d = {"observations": obs, "next_observations": obs + 1, "actions": np.arange(6, dtype=np.float32)[:, None],
         "rewards": np.zeros(6, np.float32), "terminals": np.array([0, 0, 1, 0, 0, 0], bool)}
    ch = action_chunks(d, 3)[..., 0]
    np.testing.assert_array_equal(ch[0], [0, 1, 2])
    np.testing.assert_array_equal(ch[1], [1, 2, 2])  # padded at the episode's end
    np.testing.assert_array_equal(ch[4], [4, 5, 5])
