import numpy as np
import pytest
from mkscp import coverage, worst_slab_coverage


def test_worst_slab_brute_force_1d(rng):
    x = rng.uniform(size=200)
    inside = (x < 0.7) | (rng.uniform(size=200) < 0.3)
    order = np.argsort(x)
    cov = inside[order].astype(float)
    n_grid, delta = 20, 0.2
    ends = np.unique(np.round(np.linspace(0, 1, n_grid + 1) * 200).astype(int))
    brute = min(cov[a:b].mean() for a in ends for b in ends if b - a >= 40)
    assert worst_slab_coverage(x, inside, delta=delta, n_grid=n_grid) == pytest.approx(brute)
    assert worst_slab_coverage(x, inside) <= coverage(inside)


def test_worst_slab_multivariate_below_marginal(rng):
    X = rng.normal(size=(500, 3))
    inside = X[:, 0] < 1.0
    w = worst_slab_coverage(X, inside, rng=rng)
    assert 0.0 <= w <= coverage(inside)
    assert w < 0.8


def test_bad_input():
    with pytest.raises(ValueError, match="same length"):
        worst_slab_coverage(np.zeros(3), [True, False])
    with pytest.raises(ValueError, match="delta"):
        worst_slab_coverage(np.zeros(3), [True] * 3, delta=0)
    with pytest.raises(ValueError, match="non-empty"):
        coverage([])
