import numpy as np
import pytest
from groupfdr.neural import hsic
from groupfdr.shapley import exact_group_shapley, group_permutation_shap


def _f(Z):
    Z = Z.reshape(len(Z), -1)
    return np.sin(Z[:, 0]) * Z[:, 3] + Z[:, 2] ** 2 + Z[:, 5] * Z[:, 6] * Z[:, 7] + np.tanh(Z[:, 8] + Z[:, 1])


def test_all_permutations_equal_exact_enumeration(rng):
    X, bg = rng.standard_normal((7, 9)), rng.standard_normal((4, 9))
    groups = [0, 0, 1, 2, 2, 2, 3, 4, 1]
    phi = group_permutation_shap(_f, X, groups, bg, "all")
    np.testing.assert_allclose(phi, exact_group_shapley(_f, X, groups, bg), atol=1e-10)
    np.testing.assert_allclose(phi.sum(1), _f(X) - _f(bg).mean(), atol=1e-10)  # efficiency


def test_block_size_one_equals_shap_permutation_explainer(rng, monkeypatch):
    numba = pytest.importorskip("numba")
    # shap's numba kernels take ~15 s to compile; as plain Python they are exact and instant here
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    shap = pytest.importorskip("shap")
    X, bg = rng.standard_normal((6, 8)), rng.standard_normal((3, 8))
    g = lambda Z: Z @ np.arange(1, 9.0) + Z[:, 0] * Z[:, 1] - 2 * Z[:, 3] * Z[:, 7]  # noqa: E731
    mine = group_permutation_shap(g, X, np.arange(8), bg, 3, random_state=0)
    ref = shap.PermutationExplainer(g, shap.maskers.Independent(bg, max_samples=3))(X, max_evals=400).values
    np.testing.assert_allclose(mine, ref, atol=1e-9)  # antithetic pairs are exact for pairwise interactions


def test_sequences_group_channels(rng):
    X, bg = rng.standard_normal((5, 4, 3)), rng.standard_normal((2, 4, 3))
    f = lambda Z: Z[:, :, 0].sum(1) * Z[:, -1, 2]  # noqa: E731
    phi = group_permutation_shap(f, X, [0, 1, 2], bg, "all")
    assert phi.shape == (5, 3)
    np.testing.assert_allclose(phi[:, 1], 0, atol=1e-12)  # channel 1 is never used
    np.testing.assert_allclose(phi, exact_group_shapley(f, X, [0, 1, 2], bg), atol=1e-10)


def test_bad_inputs(rng):
    X = rng.standard_normal((3, 4))
    with pytest.raises(ValueError, match="background"):
        group_permutation_shap(_f, X, [0, 0, 1, 1], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="one label"):
        group_permutation_shap(_f, X, [0, 1], np.zeros((2, 4)))
    with pytest.raises(ValueError, match="n_permutations"):
        group_permutation_shap(_f, X, [0, 0, 1, 1], np.zeros((2, 4)), 0)
    with pytest.raises(ValueError, match="finite"):
        group_permutation_shap(_f, np.full((2, 4), np.nan), [0, 0, 1, 1], np.zeros((2, 4)))


def test_hsic_linear_kernel_is_squared_cross_covariance(rng):
    X, Y = rng.standard_normal((40, 3)), rng.standard_normal((40, 2))
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    assert hsic(X, Y, kernel="linear") == pytest.approx(np.sum((Xc.T @ Yc) ** 2) / 40**2, rel=1e-10)
    x = rng.standard_normal(300)
    assert hsic(x, x**2) > 5 * hsic(x, rng.standard_normal(300))  # dependence without correlation
