import numpy as np
import pytest
from tmevolve import sample_mean, sample_median


def test_mean_matches_numpy(rng):
    x = rng.normal(size=(7, 11))
    np.testing.assert_allclose(sample_mean(x), np.mean(x, axis=-1))


def test_median_matches_numpy(rng):
    x = rng.normal(size=(7, 11))
    np.testing.assert_allclose(sample_median(x), np.median(x, axis=-1))


@pytest.mark.parametrize("bad", [np.array([]), np.array([1.0, np.nan])])
def test_bad_input(bad):
    with pytest.raises(ValueError, match="x must"):
        sample_mean(bad)
