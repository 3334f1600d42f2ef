import numpy as np
import pytest
from groupfdr import simulate_var_groups
from groupfdr.data import load_xy


def test_var_groups_within_block_correlation():
    X, y, groups, active = simulate_var_groups(4000, 3, 4, 1, 0.7, random_state=0)
    c = np.corrcoef(X[:, :4].T)
    assert c[0, 1] == pytest.approx(0.7, abs=0.05) and c[0, 2] == pytest.approx(0.49, abs=0.05)
    assert groups.tolist() == [0] * 4 + [1] * 4 + [2] * 4 and len(active) == 1


def test_bad_simulator_arguments():
    with pytest.raises(ValueError, match="rho"):
        simulate_var_groups(100, 3, 2, 1, 1.0)
    with pytest.raises(TypeError, match="n_groups"):
        simulate_var_groups(100, "3", 2, 1, 0.5)
    with pytest.raises(ValueError, match="n_active"):
        simulate_var_groups(100, 3, 2, 5, 0.5)


def test_csv_with_bad_rows_and_prefix_groups(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a_lag1,a_lag2,b_lag1,y\n1,2,3,4\n5,x,6,7\n\n8,9,10,11\n1,2,,3\n2,3,4,5\n")
    X, y, g, info = load_xy(p, target="y", groups="prefix")
    assert X.shape == (3, 3) and y.tolist() == [4, 11, 5]
    assert g.tolist() == ["a", "a", "b"] and info["skipped_rows"] == [3, 6]
    with pytest.raises(ValueError, match="target column"):
        load_xy(p, target="z", groups="prefix")
    with pytest.raises(ValueError, match="no groups"):
        load_xy(p, target="y")


def test_npz_and_npy(tmp_path, rng):
    X, y = rng.standard_normal((20, 4)), rng.standard_normal(20)
    np.savez(tmp_path / "d.npz", X=X, y=y, groups=np.array([0, 0, 1, 1]))
    X2, y2, g, _ = load_xy(tmp_path / "d.npz")
    np.testing.assert_array_equal(X2, X)
    np.save(tmp_path / "d.npy", np.column_stack([X, y]))
    np.save(tmp_path / "g.npy", np.array([1, 1, 2, 2]))
    X3, y3, g3, _ = load_xy(tmp_path / "d.npy", groups_path=tmp_path / "g.npy")
    np.testing.assert_array_equal(y3, y)
    np.save(tmp_path / "g5.npy", np.arange(5))
    with pytest.raises(ValueError, match="one label per feature"):
        load_xy(tmp_path / "d.npy", groups_path=tmp_path / "g5.npy")
    with pytest.raises(FileNotFoundError):
        load_xy(tmp_path / "missing.csv")
