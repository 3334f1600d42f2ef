import numpy as np
import pytest
import torch
from probetraj import POOLINGS, PooledProbe, planted_hmm
from probetraj.probe import pool_scores
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score


@pytest.fixture(scope="module")
def hmm():
    return planted_hmm(120, T=12, d=6, separation=1.5, seed=0)


def test_poolings_on_hand_made_scores():
    s = torch.tensor([[1.0, 5.0, 2.0, 0.0], [3.0, -1.0, 0.0, 0.0]])
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    assert pool_scores(s, mask, "mean").tolist() == [2.0, 1.0]
    assert pool_scores(s, mask, "last").tolist() == [0.0, -1.0]
    assert pool_scores(s, mask, "max").tolist() == [5.0, 3.0]
    # rolling means with window 2: (3, 3.5, 1) and (1,); a window longer than the sequence uses its length
    assert pool_scores(s, mask, "rolling", window=2).tolist() == [3.5, 1.0]
    assert pool_scores(s, mask, "rolling", window=9).tolist() == [2.0, 1.0]
    heads = torch.stack([s, -s], -1)  # MultiMax sums each head's max
    assert pool_scores(heads, mask, "multimax").tolist() == [5.0 + 0.0, 3.0 + 1.0]


@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_mean_and_last_probes_equal_sklearn_logistic_regression(hmm, pooling):
    H, y, _ = hmm
    probe = PooledProbe(pooling=pooling, C=0.3).fit(H, y)
    Z = [(h - probe.mean_) / probe.scale_ for h in H]
    X = np.stack([z.mean(0) if pooling == "mean" else z[-1] for z in Z])
    ref = LogisticRegression(C=0.3, tol=1e-10, max_iter=5000).fit(X, y)
    np.testing.assert_allclose(probe.coef_[0], ref.coef_[0], atol=1e-4)
    np.testing.assert_allclose(probe.predict_proba(H), ref.predict_proba(X), atol=1e-5)


@pytest.mark.parametrize("pooling", POOLINGS)
def test_trajectory_is_the_token_read_out(hmm, pooling):
    H, y, _ = hmm
    probe = PooledProbe(pooling=pooling).fit(H, y)
    p = probe.trajectory(H[0])
    assert p.shape == (len(H[0]),) and p.min() >= 0 and p.max() <= 1
    if pooling != "multimax":  # the pooled logit is the pooling of the token logits
        s = probe.token_scores(H[0])
        ref = {
            "mean": s.mean(),
            "last": s[-1],
            "max": s.max(),
            "rolling": max(s[i : i + 8].mean() for i in range(len(s) - 7)),
        }[pooling]
        assert probe.decision_function([H[0]])[0] == pytest.approx(ref, abs=1e-9)


def test_bad_input(hmm):
    H, y, _ = hmm
    with pytest.raises(ValueError, match="pooling must be one of"):
        PooledProbe(pooling="median").fit(H, y)
    with pytest.raises(ValueError, match="mismatched widths"):
        PooledProbe().fit([H[0], H[1][:, :3]], y[:2])
    bad = [h.copy() for h in H]
    bad[3][2, 1] = np.nan
    with pytest.raises(ValueError, match=r"H\[3\] has NaN"):
        PooledProbe().fit(bad, y)
    with pytest.raises(ValueError, match="one-class"):
        PooledProbe().fit(H, np.zeros(len(H)))
    with pytest.raises(ValueError, match="C must be > 0"):
        PooledProbe(C=0.0).fit(H, y)
    with pytest.raises(TypeError, match="C must be"):
        PooledProbe(C="1").fit(H, y)
    probe = PooledProbe().fit(H, y)
    with pytest.raises(ValueError, match="width 3, expected 6"):
        probe.trajectory(H[0][:, :3])


def test_save_load_round_trip(tmp_path, hmm):
    H, y, _ = hmm
    probe = PooledProbe(pooling="rolling", window=4).fit(H, y)
    probe.save(tmp_path / "p.pt")
    back = PooledProbe.load(tmp_path / "p.pt")
    assert back.get_params() == probe.get_params()
    np.testing.assert_array_equal(back.predict_proba(H), probe.predict_proba(H))
    np.testing.assert_array_equal(back.predict(H), probe.predict(H))
    with pytest.raises(FileNotFoundError):
        PooledProbe.load(tmp_path / "missing.pt")


def test_sklearn_clone_grid_search_and_grouped_cv(hmm):
    H, y, g = hmm
    probe = PooledProbe(pooling="max")
    assert clone(probe).get_params() == probe.get_params()
    gs = GridSearchCV(probe, {"pooling": ["mean", "last"], "C": [0.1, 1.0]}, cv=GroupKFold(3), scoring="roc_auc")
    gs.fit(H, y, groups=g)
    assert gs.best_params_["pooling"] == "last"  # the label is the final state: the last token reads it
    scores = cross_val_score(PooledProbe(pooling="last"), H, y, groups=g, cv=GroupKFold(3), scoring="roc_auc")
    assert scores.min() > 0.8
