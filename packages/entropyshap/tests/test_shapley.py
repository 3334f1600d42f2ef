import numpy as np
import pytest
from entropyshap import exact_shapley, permutation_shapley
from entropyshap.baselines import shapiq_exact
from entropyshap.shapley import coalition_matrix, masks_of


def _game(p, rng):
    """A random non-additive game with a few interactions, on boolean coalitions."""
    a, B = rng.normal(size=p), rng.normal(size=(p, p))
    return lambda C: C @ a + np.einsum("mi,ij,mj->m", C.astype(float), B, C.astype(float)) + np.sin(C.sum(1))


@pytest.mark.parametrize("p", [1, 3, 6])
def test_exact_equals_shapiq(p, rng):
    f = _game(p, rng)
    np.testing.assert_allclose(exact_shapley(f, p), shapiq_exact(f, p), atol=1e-10)


def test_masks_roundtrip():
    m = np.arange(32)
    np.testing.assert_array_equal(masks_of(coalition_matrix(m, 5)), m)


def test_vector_games_and_efficiency(rng):
    p = 5
    fs = [_game(p, rng) for _ in range(3)]
    phi = exact_shapley(lambda C: np.stack([f(C) for f in fs], 1), p)
    assert phi.shape == (p, 3)
    full, empty = np.ones((1, p), bool), np.zeros((1, p), bool)
    for g, f in enumerate(fs):
        np.testing.assert_allclose(phi[:, g].sum(), f(full)[0] - f(empty)[0], atol=1e-10)


def test_permutation_converges_to_exact(rng):
    p = 6
    f = _game(p, rng)
    exact = exact_shapley(f, p)

    def ev(m):
        return f(coalition_matrix(m, p))

    errs = [np.max(np.abs(permutation_shapley(ev, p, n, np.random.default_rng(3)) - exact)) for n in (8, 2000)]
    assert errs[1] < errs[0] and errs[1] < 0.05 * np.max(np.abs(exact))
    # efficiency holds for every sampled order
    np.testing.assert_allclose(permutation_shapley(ev, p, 4, np.random.default_rng(4)).sum(),
                               exact.sum(), atol=1e-10)


def test_bad_input():
    with pytest.raises(ValueError, match="p"):
        exact_shapley(lambda C: C.sum(1), 25)
    with pytest.raises(TypeError, match="value_fn"):
        exact_shapley(3, 2)
    with pytest.raises(ValueError, match="one value per coalition"):
        exact_shapley(lambda C: np.zeros(3), 3)
