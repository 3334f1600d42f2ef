import numpy as np
import pytest
from mkscp.data import RESIDUALS, macrodata_growth, make_regression, sample_residuals


@pytest.mark.parametrize("kind", RESIDUALS)
def test_shapes_and_centring(kind, rng):
    X, Y = make_regression(kind, 3000, 4, rng)
    assert X.shape == (3000, 1) and Y.shape == (3000, 4)
    assert np.all((X >= 0) & (X <= 1))
    E = sample_residuals(kind, 20_000, 4, rng)
    assert np.all(np.isfinite(E)) and E.shape == (20_000, 4)


def test_banana_is_not_elliptical(rng):
    E = sample_residuals("banana", 20_000, 2, rng)
    # the second coordinate depends on the first through z0^2: uncorrelated but dependent
    assert abs(np.corrcoef(E[:, 0], E[:, 1])[0, 1]) < 0.05
    assert np.corrcoef(E[:, 0] ** 2, E[:, 1])[0, 1] > 0.5


def test_macrodata_from_statsmodels():
    X, Y = macrodata_growth(lags=2)
    assert Y.shape == (200, 3) and X.shape == (200, 6)
    np.testing.assert_allclose(X[1:, :3], Y[:-1])  # the first lag is the previous target


def test_bad_kind(rng):
    with pytest.raises(ValueError, match="kind must be one of"):
        sample_residuals("cauchy", 10, 2, rng)
