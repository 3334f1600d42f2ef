import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from toolgap import direction_geometry, probe_layers, transition_table
from toolgap.probes import fold_ids


def _planted(rng, n=600, d=24, angle=np.pi / 2, noise=0.3):
    """Two labels read along unit directions u, v at a known angle; layer 0 is pure noise."""
    u = np.zeros(d)
    u[0] = 1
    v = np.zeros(d)
    v[0], v[1] = np.cos(angle), np.sin(angle)
    z = rng.standard_normal((n, d))
    yn = (z @ u + noise * rng.standard_normal(n)) > 0
    ya = (z @ v + noise * rng.standard_normal(n)) > 0
    H = np.stack([rng.standard_normal((n, d)), z], 1)
    return H, yn, ya, np.arange(n) // 2


@pytest.mark.parametrize("angle", [np.pi / 2, np.pi / 3])
def test_planted_directions_at_a_known_angle_are_recovered(rng, angle):
    H, yn, ya, g = _planted(rng, angle=angle)
    geo = direction_geometry(H, yn, ya, groups=g)
    assert abs(geo.cos_raw.iloc[1] - np.cos(angle)) < 0.1
    assert abs(geo.cos_white.iloc[1] - np.cos(angle)) < 0.15  # isotropic states: whitened ≈ raw
    assert geo.same_necessity.iloc[1] > 0.9 and geo.same_action.iloc[1] > 0.9
    pn = probe_layers(H, yn, groups=g, n_boot=20)
    assert pn.auroc[1] > 0.9 and 0.35 < pn.auroc[0] < 0.65
    assert pn.auroc_lower[1] <= pn.auroc[1] <= pn.auroc_upper[1]
    # the pooled out-of-fold AUROC is sklearn's on the stored scores
    assert pn.auroc[1] == pytest.approx(roc_auc_score(yn, pn.oof[:, 1]))


def test_random_labels_give_auroc_near_half_and_cosine_near_1_over_sqrt_d(rng):
    n, d = 800, 64
    H = rng.standard_normal((n, 1, d))
    yn, ya = rng.random(n) < 0.5, rng.random(n) < 0.4
    g = np.arange(n)
    pr = probe_layers(H, yn, groups=g, n_boot=30)
    assert abs(pr.auroc[0] - 0.5) < 0.07 and pr.auroc_lower[0] < 0.5 < pr.auroc_upper[0]
    geo = direction_geometry(H, yn, ya, groups=g)
    assert abs(geo.cos_raw.iloc[0]) < 4 / np.sqrt(d)
    assert geo.random.iloc[0] == pytest.approx(np.sqrt(2 / (np.pi * d)), rel=0.25)


def test_label_correlation_induces_cosine(rng):
    """A surrogate action label drawn from P(action | necessity) carries the labels' correlation."""
    H, yn, _, g = _planted(rng, n=800)
    ya = np.where(rng.random(len(yn)) < 0.9, yn, ~yn)  # strongly correlated, nothing else
    geo = direction_geometry(H, yn, ya, groups=g)
    assert geo.label_phi.iloc[1] > 0.7 and geo.induced.iloc[1] > 0.7 and geo.cos_raw.iloc[1] > 0.7


def test_no_question_in_two_folds(rng):
    y = rng.random(300) < 0.3
    g = rng.integers(0, 80, 300)
    f = fold_ids(y, g, folds=5)
    for grp in np.unique(g):
        assert len(np.unique(f[g == grp])) == 1
    assert len(np.unique(f)) == 5


def test_transitions_sum_to_the_mismatch(rng):
    n = 500
    nec, cog, act = (rng.random(n) < p for p in (0.5, 0.5, 0.4))
    t = transition_table(nec, cog, act)
    assert t["cognition"] + t["transition"] == t["mismatch"] == int(np.sum(nec != act))
    assert int(t["table"].to_numpy().sum()) == n
    assert t["transition"] == int(np.sum((cog == nec) & (act != nec)))
    perfect = transition_table(nec, nec, act)
    assert perfect["transition_share"] == 1.0


def test_probe_bad_inputs(rng):
    H = rng.standard_normal((50, 2, 4))
    g = np.arange(50)
    with pytest.raises(ValueError, match="one class"):
        probe_layers(H, np.zeros(50, bool), groups=g)
    with pytest.raises(ValueError, match="out of range"):
        probe_layers(H, np.arange(50) % 2, groups=g, layers=[2])
    with pytest.raises(ValueError, match="groups"):
        probe_layers(H, np.arange(50) % 2, groups=None)
    with pytest.raises(ValueError, match="finite"):
        probe_layers(np.full((50, 2, 4), np.nan), np.arange(50) % 2, groups=g)
    with pytest.raises(ValueError, match="folds"):
        probe_layers(H, np.arange(50) % 2, groups=g, folds=3)
    with pytest.raises(ValueError, match="equal lengths"):
        transition_table([1, 0], [1], [0, 0])
