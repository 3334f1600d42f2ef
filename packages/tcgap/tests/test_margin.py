import numpy as np
import pytest
from sklearn.covariance import ledoit_wolf_shrinkage
from tcgap import gamma_min
from tcgap.data import gaussian_tasks
from tcgap.margin import ledoit_wolf_coefficient


@pytest.mark.parametrize("gamma", [2.0, 9.0])
def test_gamma_min_recovers_planted_margin(gamma):
    gen = gaussian_tasks(np.random.default_rng(3), gamma=gamma, d=10, within=2.0)
    X, y = gen["sample"](20000)
    g_task = gamma_min(X, y, gen["task_of_class"], shrinkage=None)
    g_class = gamma_min(X, y, gen["task_of_class"], shrinkage=None, centroids="class")
    assert g_task == pytest.approx(gamma, rel=0.05, abs=0.05)
    assert gen["gamma_class"] == pytest.approx(gamma + 2.0**2 / 2)  # analytic: γ + within²/2
    assert g_class == pytest.approx(gen["gamma_class"], rel=0.05)


def test_two_isotropic_gaussians_against_hand_computation(rng):
    X = np.r_[rng.normal(size=(4000, 2)), rng.normal(size=(4000, 2)) + [3.0, 0.0]]
    y = np.repeat([0, 1], 4000)
    assert gamma_min(X, y, {0: 0, 1: 1}, shrinkage=None) == pytest.approx(9.0, rel=0.05)


def test_task_map_dict_array_and_non_contiguous_classes(rng):
    X = rng.normal(size=(300, 3)) + np.repeat(np.eye(3) * 3, 100, 0)
    y = np.repeat([0, 1, 2], 100)
    a = gamma_min(X, y, np.array([0, 1, 0]))
    b = gamma_min(X, y, {0: 0, 1: 1, 2: 0})
    c = gamma_min(X, y + 10, {10: "a", 11: "b", 12: "a"})
    assert a == b == c
    assert gamma_min(X, y, {0: 0, 1: 1, 2: 0}, centroids="class") <= gamma_min(
        X, y, {0: 0, 1: 1, 2: 2}, centroids="class") + 1e-12


def test_ledoit_wolf_from_streamed_statistics_matches_sklearn(rng):
    R = rng.normal(size=(40, 25)) @ rng.normal(size=(25, 25))
    assert ledoit_wolf_coefficient(R.T @ R, 40, float(np.sum(np.sum(R * R, 1) ** 2))) == pytest.approx(
        ledoit_wolf_shrinkage(R, assume_centered=True), rel=1e-10)


def test_shrinkage_settings_and_debias(gauss):
    X, y = gauss["gamma"]
    t = gauss["task_of"]
    g0, info = gamma_min(X, y, t, shrinkage=0.0, log=True)
    assert info["shrinkage"] == 0.0
    g1 = gamma_min(X, y, t, shrinkage=1.0)  # identity metric scaled by tr/d
    assert g1 != g0
    assert gamma_min(X, y, t, debias=True) < gamma_min(X, y, t)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"X": np.ones((5, 10)), "shrinkage": None}, ValueError, "more samples than dimensions"),
    ({"X": np.full((20, 2), np.nan)}, ValueError, "non-finite"),
    ({"shrinkage": "oas"}, ValueError, "shrinkage"),
    ({"shrinkage": 1.5}, ValueError, "shrinkage"),
    ({"centroids": "pairs"}, ValueError, "centroids"),
    ({"task_of_class": {0: 0}}, ValueError, "no task for class"),
    ({"task_of_class": {0: 0, 1: 0}}, ValueError, "at least two tasks"),
    ({"X": "abc"}, TypeError, "X must be"),
])
def test_bad_input(rng, kwargs, err, match):
    args = {"X": rng.normal(size=(20, 2)), "y": np.repeat([0, 1], 10), "task_of_class": {0: 0, 1: 1}, **kwargs}
    if args["X"] is not None and not isinstance(args["X"], str) and len(args["X"]) != 20:
        args["y"] = np.repeat([0, 1], len(args["X"]) // 2 + 1)[: len(args["X"])]
    with pytest.raises(err, match=match):
        gamma_min(args.pop("X"), args.pop("y"), args.pop("task_of_class"), **args)


@pytest.mark.parametrize("shrinkage", ["ledoit_wolf", 0.3, 1.0])
def test_gram_path_equals_covariance_path(rng, shrinkage):
    from tcgap.margin import _pairs_cov, _pairs_gram

    R = rng.normal(size=(40, 90)) @ rng.normal(size=(90, 90)) / 10
    M = rng.normal(size=(5, 90))
    a, b = _pairs_cov(R, M, shrinkage, True), _pairs_gram(R, M, shrinkage, True)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-9, atol=1e-9)
    assert a[1] == pytest.approx(b[1], rel=1e-9) and a[2] == pytest.approx(b[2], rel=1e-12)
