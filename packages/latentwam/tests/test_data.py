import numpy as np
import pytest
from latentwam import collect_demos, load_lerobot


def test_demos_shapes_and_dropped(demos):
    assert demos.n_episodes == 200
    assert len(demos) == 200 * (30 - 8) and demos.dropped == 200 * 8
    b = demos.batch([0, 5])
    assert b["frames"].shape == (2, 2, 3, 24, 24) and b["future"].shape == (2, 2, 3, 24, 24)
    assert b["actions"].shape == (2, 8, 2)
    np.testing.assert_array_equal(b["future"][1, 0].numpy(), demos.frames[5 + 4])
    np.testing.assert_array_equal(b["frames"][0, 0].numpy(), demos.frames[0])  # the first frame repeated


def test_collect_demos_bad_input():
    with pytest.raises(ValueError, match="n_episodes"):
        collect_demos("latentwam/Intercept-v0", 0)
    with pytest.raises(ValueError, match="future_offsets"):
        collect_demos("latentwam/Intercept-v0", 2, future_offsets=(0,))


@pytest.mark.parametrize("kind", ["image", "video"])
def test_lerobot_reader(tmp_path, kind, write_lerobot):
    key = write_lerobot(tmp_path, kind)
    d = load_lerobot(tmp_path, image_key=key, future_offsets=(2, 4), chunk=3)
    # episode 0 (12 steps): t in 0..7 are valid; episode 1 (6 steps): t in 0..1; the rest dropped and counted
    assert len(d) == 8 + 2 and d.dropped == (12 - 8) + (6 - 2)
    assert d.proprio_dim == 3 and d.action_dim == 2 and d.frame_shape == (3, 16, 16)
    b = d.batch([3, 9])
    red = b["future"][:, :, 0].float().mean((-1, -2)).numpy()
    tol = 0.5 if kind == "image" else 6.0
    np.testing.assert_allclose(red[0], [10 * (3 + 2 + 1), 10 * (3 + 4 + 1)], atol=tol)  # ep 0, t = 3
    np.testing.assert_allclose(red[1], [10 * (1 + 2 + 1), 10 * (1 + 4 + 1)], atol=tol)  # ep 1, t = 1
    assert abs(float(b["frames"][1, -1, 1].float().mean()) - 100) < tol


def test_lerobot_reader_errors(tmp_path, write_lerobot):
    key = write_lerobot(tmp_path, "image")
    with pytest.raises(KeyError, match="observation.images.wrist"):
        load_lerobot(tmp_path, image_key="observation.images.wrist")
    with pytest.raises(FileNotFoundError, match="info.json"):
        load_lerobot(tmp_path / "nope", image_key=key)
    with pytest.raises(ValueError, match="no valid samples"):
        load_lerobot(tmp_path, image_key=key, future_offsets=(20,))
