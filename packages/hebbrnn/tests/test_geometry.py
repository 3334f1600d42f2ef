import numpy as np
import pytest
from hebbrnn import ordinal_geometry
from scipy.linalg import subspace_angles


def _labels(n_trials):
    g = np.tile(np.repeat(np.arange(3), 3), n_trials)
    loc = np.tile(np.tile(np.arange(3), 3), n_trials)
    return g, loc


def test_planted_orthogonal_code_beats_the_null(rng):
    H, g, loc = 40, *_labels(30)
    Q, _ = np.linalg.qr(rng.normal(size=(H, 4)))
    code_g = np.array([[1, 0], [-0.5, 0.8], [-0.5, -0.8]]) @ Q[:, :2].T * 2
    code_l = np.array([[1, 0], [-0.5, 0.8], [-0.5, -0.8]]) @ Q[:, 2:].T * 2
    S = code_g[g] + code_l[loc] + rng.normal(size=(len(g), H))
    out = ordinal_geometry(S, g, loc, n_null=100, n_null_decode=5)
    assert out["mean_angle"] > 80 and out["p_mean_angle"] < 0.05 and out["mean_angle"] > out["null_mean_angle"]
    assert out["decode_local"] > 0.6 and out["p_decode_local"] < 0.2
    assert out["additive_r2"] > out["null_additive_r2"]
    # the angles are scipy's principal angles between the coefficient subspaces (an independent check)
    ref = np.degrees(subspace_angles((code_g[1:] - code_g[0]).T, (code_l[1:] - code_l[0]).T)).mean()
    assert abs(out["mean_angle"] - ref) < 10


def test_random_high_dimensional_states_do_not_beat_the_null(rng):
    g, loc = _labels(20)
    ps = []
    for seed in range(4):
        S = np.random.default_rng(seed).normal(size=(len(g), 200))  # no code: random subspaces, ≈ orthogonal
        out = ordinal_geometry(S, g, loc, n_null=60, n_null_decode=0, seed=seed)
        assert out["mean_angle"] > 60  # "≈ 90°" by itself ...
        ps.append(out["p_mean_angle"])
        assert abs(out["decode_local"] - 1 / 3) < 0.15
    assert max(ps) > 0.05 and np.mean(ps) > 0.2  # ... but not beyond the shuffled null


def test_aligned_code_is_not_orthogonal(rng):
    H, g, loc = 30, *_labels(30)
    v = rng.normal(size=(2, H))
    S = (v[0] * g[:, None] + v[1] * loc[:, None] + 0.3 * v[0] * loc[:, None]) + 0.3 * rng.normal(size=(len(g), H))
    S = S + (g == 1)[:, None] * v[1] * 0.5 + (loc == 1)[:, None] * v[0] * 0.5
    out = ordinal_geometry(S, g, loc, n_null=20, n_null_decode=0)
    assert out["mean_angle"] < out["null_mean_angle"]


def test_bad_input(rng):
    g, loc = _labels(2)
    S = rng.normal(size=(len(g), 5))
    with pytest.raises(ValueError, match="finite"):
        ordinal_geometry(np.where(S > 1, np.nan, S), g, loc, n_null=2)
    with pytest.raises(ValueError, match="shape"):
        ordinal_geometry(S, g[:-1], loc, n_null=2)
    with pytest.raises(TypeError, match="integer"):
        ordinal_geometry(S, g.astype(float), loc, n_null=2)
    with pytest.raises(ValueError, match="two"):
        ordinal_geometry(S, np.zeros_like(g), loc, n_null=2)
