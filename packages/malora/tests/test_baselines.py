import numpy as np
import pytest
from malora import baselines as bl


def test_simple_merges(rng):
    D = [rng.normal(size=(3, 6)) for _ in range(3)]
    np.testing.assert_allclose(bl.BASELINES["uniform"][0](D), np.mean(D, axis=0))
    np.testing.assert_allclose(bl.BASELINES["sum"][0](D), np.sum(D, axis=0))
    # density 1 keeps everything: DARE is task arithmetic, TIES/KnOTS-lite keep the elected-sign mean
    np.testing.assert_allclose(bl.dare(D, 0.5, 1.0), 0.5 * np.sum(D, axis=0), atol=1e-12)
    same_sign = [np.abs(x) for x in D]
    np.testing.assert_allclose(bl.ties(same_sign, 1.0, 1.0), np.mean(same_sign, axis=0), atol=1e-12)
    # one task: KnOTS-lite reproduces the update exactly (the shared basis is its own SVD)
    np.testing.assert_allclose(bl.knots_lite(D[:1], 2.0, 1.0), 2.0 * D[0], atol=1e-10)


def test_tune_extends_the_grid_and_picks_the_best(rng):
    D = [rng.normal(size=(2, 3)) for _ in range(2)]
    target = 40.0 * np.sum(D, axis=0)  # optimum beyond the default grid's edge (5.0)
    delta, meta = bl.tune("task_arithmetic", D, lambda m: -np.linalg.norm(m - target))
    assert meta["params"]["scale"] == pytest.approx(45.0) and not meta["edge"]
    delta, meta = bl.tune("uniform", D, lambda m: 0.0)
    np.testing.assert_allclose(delta, np.mean(D, axis=0))
