import numpy as np
import pytest
from robustpredict.data import MeanFunction, noise, sample


@pytest.mark.parametrize("kind", ["gaussian", "student_t", "two_point"])
def test_noise_is_zero_mean_with_rmse_eta(kind, rng):
    e = noise(rng, 200000, 0.3, kind)
    assert abs(e.mean()) < 0.005
    # t with 3 degrees of freedom has no fourth moment: its sample RMSE converges slowly
    np.testing.assert_allclose(np.sqrt(np.mean(e**2)), 0.3, rtol=0.05 if kind == "student_t" else 0.01)
    if kind == "two_point":
        np.testing.assert_allclose(np.abs(e), 0.3)
    if kind == "student_t":  # heavier tails than the Gaussian of the same RMSE
        assert np.mean(np.abs(e) > 3 * 0.3) > 2 * 0.0027


@pytest.mark.parametrize("kind", ["linear", "nonlinear"])
def test_mean_function_scale_and_positivity(kind, rng):
    f = MeanFunction(kind, d=10, mean=5.0, spread=1.0, seed=3)
    X, y = sample(rng, f, 100000, 0.01, "gaussian")
    fx = f(X)
    assert abs(fx.mean() - 5.0) < 0.05
    assert 0.8 < fx.std() < 1.2
    assert np.all(y >= 0) and np.all(fx > 0)
    # f is E[y|x]: the residual is uncorrelated with f
    assert abs(np.corrcoef(fx, y - fx)[0, 1]) < 0.02


def test_bad_input(rng):
    with pytest.raises(ValueError, match="kind"):
        MeanFunction("cubic")
    with pytest.raises(ValueError, match="noise kind"):
        noise(rng, 10, 0.1, "laplace")
    with pytest.raises(ValueError, match="eta"):
        noise(rng, 10, -0.1)
