import numpy as np
import pytest
from groupfdr import BlockGaussianMirror
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline


def test_selector_api_transform_and_pipeline(small):
    X, y, groups, _, _, _ = small
    sel = BlockGaussianMirror(groups, q=0.3, random_state=0).fit(X, y)
    mask = sel.get_support()
    assert mask.shape == (X.shape[1],) and sel.n_features_in_ == X.shape[1]
    assert sel.transform(X).shape[1] == mask.sum() == 3 * len(sel.selected_groups_)
    assert clone(sel).get_params()["q"] == 0.3
    if mask.any():
        scores = cross_val_score(make_pipeline(clone(sel), LinearRegression()), X, y, cv=3)
        assert np.all(np.isfinite(scores))


def test_save_and_load_without_the_data(small, tmp_path):
    X, y, groups, _, _, _ = small
    sel = BlockGaussianMirror([f"g{g}" for g in groups], q=0.3, norm="whitened", random_state=0).fit(X, y)
    path = sel.save(tmp_path / "sel.json")
    back = BlockGaussianMirror.load(path)
    assert back.selected_groups_ == sel.selected_groups_ and back.norm == "whitened"
    np.testing.assert_array_equal(back.transform(X), sel.transform(X))
    np.testing.assert_allclose(back.mirror_statistics_, sel.mirror_statistics_)
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a saved BlockGaussianMirror"):
        BlockGaussianMirror.load(tmp_path / "bad.json")


def test_the_selector_never_uses_the_covariance(small, monkeypatch):
    """Only X, y and the mirror noise: refitting on a rotated-population copy of X changes nothing else."""
    X, y, groups, _, _, _ = small
    import groupfdr.mirror as m

    seen = []
    monkeypatch.setattr(m.np, "cov", lambda *a, **k: seen.append(1))  # no covariance estimate is formed
    BlockGaussianMirror(groups, random_state=0).fit(X, y)
    assert not seen
    import knockpy.knockoff_filter as kf

    calls = {}
    orig = kf.KnockoffFilter.forward

    def spy(self, *a, **k):
        calls.update(k)
        return orig(self, *a, **k)

    monkeypatch.setattr(kf.KnockoffFilter, "forward", spy)
    from groupfdr.baselines import group_knockoffs

    group_knockoffs(X, y, groups, q=0.3, method="equicorrelated", random_state=0)
    assert calls.get("Sigma") is None  # knockoffs estimate it too


@pytest.mark.parametrize("kwargs, err, match", [
    ({"q": 0.0}, ValueError, "q must be in"),
    ({"q": 1.5}, ValueError, "q must be in"),
    ({"q": "0.1"}, TypeError, "q must be"),
    ({"estimator": "ridge"}, ValueError, "estimator"),
    ({"offset": 2}, ValueError, "offset"),
    ({"alpha": -1.0}, ValueError, "alpha"),
    ({"norm": "l1"}, ValueError, "norm"),
])
def test_bad_parameters(small, kwargs, err, match):
    X, y, groups, _, _, _ = small
    with pytest.raises(err, match=match):
        BlockGaussianMirror(groups, **kwargs).fit(X, y)


def test_bad_data(small):
    X, y, groups, _, _, _ = small
    with pytest.raises(ValueError, match="one label per column"):
        BlockGaussianMirror(groups[:-1]).fit(X, y)
    with pytest.raises(ValueError, match="empty"):
        BlockGaussianMirror([list(range(12)), [], list(range(12, 24))]).fit(X, y)
    with pytest.raises(ValueError, match="partition"):
        BlockGaussianMirror([list(range(12)), list(range(11, 24))]).fit(X, y)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        BlockGaussianMirror(groups).fit(Xn, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        BlockGaussianMirror(groups).fit(X, np.where(np.arange(len(y)) == 0, np.inf, y))
    with pytest.raises(ValueError, match="estimator='lasso'"):
        BlockGaussianMirror(groups).fit(X[:25], y[:25])
    assert len(BlockGaussianMirror().fit(X, y).groups_) == X.shape[1]  # None: one group per column


def test_rank_deficient_block_is_named(small):
    X, y, groups, _, _, _ = small
    Xd = X.copy()
    Xd[:, 7] = 2 * Xd[:, 6]  # two lags of group 2 are collinear
    with pytest.raises(ValueError, match="group 2 is rank-deficient"):
        BlockGaussianMirror(groups, random_state=0).fit(Xd, y)


def test_passes_scikit_learn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    failed = [r for r in check_estimator(BlockGaussianMirror(), on_fail=None) if r["status"] == "failed"]
    assert not failed, [(r["check_name"], str(r["exception"])[:80]) for r in failed]
