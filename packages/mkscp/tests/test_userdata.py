"""Users' data sets: csv/npz loaders (bad rows skipped and counted), any regressor by import path, the CLI."""

import numpy as np
import pytest
from mkscp.data import load_table
from mkscp.run import run
from mkscp.userdata import make_estimator
from sklearn.ensemble import RandomForestRegressor

from paperworks.hydra_glue import compose


def test_csv_loader_skips_and_counts_bad_rows(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("a,b,y1,y2\n1,2,3,4\n5,x,7,8\n9,10,11\n\n13,14,nan,16\n17,18,19,20\n")
    X, Y, info = load_table(f, targets=["y1", "y2"])
    np.testing.assert_array_equal(X, [[1, 2], [17, 18]])
    np.testing.assert_array_equal(Y, [[3, 4], [19, 20]])
    assert info["skipped"] == 3 and info["skipped_lines"] == [3, 4, 6]  # line 1 is the header
    assert info["features"] == ["a", "b"]
    X, Y, _ = load_table(f, targets=[3], features=["a"])
    assert X.shape == (4, 1) and Y.shape == (4, 1)  # rows bad only in unused columns (b, y1) are kept
    with pytest.raises(ValueError, match="no column 'zz'"):
        load_table(f, targets=["zz"])
    with pytest.raises(ValueError, match="data.targets is required"):
        load_table(f)
    with pytest.raises(FileNotFoundError):
        load_table(tmp_path / "missing.csv", targets=["y1"])


def test_npz_loader(tmp_path):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(30, 2)), rng.normal(size=(30, 3))
    X[4, 1] = np.inf
    np.savez(tmp_path / "d.npz", X=X, Y=Y)
    Xl, Yl, info = load_table(tmp_path / "d.npz", targets=[0, 2])
    assert Xl.shape == (29, 2) and Yl.shape == (29, 2) and info["skipped_lines"] == [4]
    np.testing.assert_array_equal(Yl, np.delete(Y, 4, axis=0)[:, [0, 2]])
    np.savez(tmp_path / "e.npz", features=X)
    with pytest.raises(ValueError, match="no array 'X'"):
        load_table(tmp_path / "e.npz")
    with pytest.raises(ValueError, match=".csv or .npz"):
        load_table(_touch(tmp_path / "d.txt"))


def _touch(p):
    p.write_text("x")
    return p


def test_estimator_by_import_path():
    est = make_estimator("sklearn.ensemble.RandomForestRegressor", {"n_estimators": 7})
    assert isinstance(est, RandomForestRegressor) and est.n_estimators == 7
    with pytest.raises(ValueError, match="cannot import"):
        make_estimator("sklearn.linear_model.NoSuchModel")
    with pytest.raises(TypeError, match="not a regressor"):
        make_estimator("numpy.linalg.norm")


def test_user_data_run_in_process(tmp_path):
    # a 3-output data set with structure the regressor can learn, through the same code as the CLI
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(400, 2))
    Y = np.c_[X @ [1.0, 2.0], np.sin(3 * X[:, 0]), X[:, 1] ** 2] + 0.1 * rng.normal(size=(400, 3))
    np.savez(tmp_path / "d.npz", X=X, Y=Y)
    cfg = compose("mkscp", ["experiment=data", f"data.path={tmp_path / 'd.npz'}", "seeds=3", "alphas=[0.2]",
                            "scores=[mks,mahalanobis,bonferroni]", "data.estimator=sklearn.ensemble.RandomForestRegressor",
                            "+data.estimator_params.n_estimators=20", "n_mc=2000", "mc_max_points=16000"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["volume_vs_mahalanobis"]
    assert out["extra"]["data"]["splits"] == {"train": 160, "fit": 80, "cal": 80, "test": 80}
    rows = out["metrics"]
    assert {r["score"] for r in rows} == {"mks", "mahalanobis", "bonferroni"} and {r["seed"] for r in rows} == {0, 1, 2}
    assert all(0.5 < r["coverage"] <= 1 for r in rows)
    with pytest.raises(ValueError, match=r"needs at least 149 calibration points \(bonferroni"):
        run(compose("mkscp", ["experiment=data", f"data.path={tmp_path / 'd.npz'}", "alphas=[0.02]",
                              "data.splits.cal=0.1"]))
