import numpy as np
import pytest
from probetraj import FEATURES, OnlineFeatures, TrajectoryFeatures, planted_hmm, trajectory_features
from scipy.stats import linregress
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def brute(p, band=0.1):
    T = len(p)
    u = np.linspace(0, 1, T)
    slope = linregress(u, p).slope if T > 1 else 0.0
    k = int(np.ceil(0.2 * T))
    cross = sum((p[i] >= 0.5) != (p[i - 1] >= 0.5) for i in range(1, T))
    settle = next(t for t in range(T + 1) if all(abs(p[s] - p[-1]) <= band for s in range(t, T)))
    return [
        np.mean(p),
        np.std(p),
        np.std(np.diff(p)) if T > 1 else 0.0,
        slope,
        np.mean(p[-k:]),
        p[-1],
        np.max(p),
        cross,
        settle / T,
    ]


@pytest.mark.parametrize("T", [1, 2, 5, 23])
def test_features_match_numpy_scipy_and_brute_force(rng, T):
    for _ in range(5):
        p = rng.random(T)
        np.testing.assert_allclose(trajectory_features(p), brute(p), atol=1e-12)
        online = OnlineFeatures()
        for v in p:
            online.update(v)
        np.testing.assert_allclose(online.value(), trajectory_features(p), atol=1e-10)


def test_hand_made_trajectories():
    f = dict(zip(FEATURES, trajectory_features([0.2, 0.6, 0.4, 0.9, 0.9])))
    assert f["crossings"] == 3 and f["final"] == 0.9 and f["max"] == 0.9
    assert f["settling"] == pytest.approx(3 / 5)  # within 0.1 of 0.9 from the 4th value on
    assert trajectory_features([0.3] * 6)[FEATURES.index("slope")] == 0.0


def test_transformer_in_a_grouped_pipeline():
    H, y, g = planted_hmm(160, T=20, d=4, separation=1.5, seed=1)
    trajs = [1 / (1 + np.exp(-(h[:, 0] - 1.5))) for h in H]
    clf = make_pipeline(TrajectoryFeatures(), StandardScaler(), LogisticRegression())
    assert clone(clf).get_params()["trajectoryfeatures__band"] == 0.1
    s = cross_val_score(clf, trajs, y, groups=g, cv=GroupKFold(4), scoring="roc_auc")
    assert s.mean() > 0.85
    X = TrajectoryFeatures(features=("final", "slope")).fit_transform(trajs)
    assert X.shape == (160, 2)
    assert list(TrajectoryFeatures().fit(trajs).get_feature_names_out()) == list(FEATURES)


def test_bad_trajectories():
    with pytest.raises(ValueError, match=r"X\[1\] must hold probabilities"):
        TrajectoryFeatures().fit_transform([np.array([0.1]), np.array([0.2, 1.3])])
    with pytest.raises(ValueError, match="NaN"):
        TrajectoryFeatures().fit_transform([np.array([0.1, np.nan])])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        TrajectoryFeatures().fit_transform([np.zeros((2, 2))])
    with pytest.raises(ValueError, match="unknown"):
        TrajectoryFeatures(features=("wiggle",)).fit_transform([np.array([0.5])])
    with pytest.raises(ValueError, match="probabilities"):
        OnlineFeatures().update(1.5)
