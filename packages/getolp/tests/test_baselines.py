import numpy as np
import ot
import pytest
from getolp import fixed_support_barycenter, grid_cost_matrix
from getolp.baselines import entropic_barycenter, entropic_matched, full_lp_barycenter, pixel_mean, true_cost


def test_full_lp_objective_is_the_true_cost_of_its_barycenter(rng, random_hists):
    shape = (4, 4)
    h = random_hists(rng, 3, shape)
    w = rng.dirichlet(np.ones(3))
    nu, info = full_lp_barycenter(h, shape, w, log=True)
    C = grid_cost_matrix(shape)
    direct = sum(wm * ot.emd2(nu.ravel() / nu.sum(), hm.ravel(), C) for wm, hm in zip(w, h))
    assert info["objective"] == pytest.approx(direct, rel=1e-7)
    assert true_cost(nu, h, shape, w) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("method", ["ibp", "convolutional"])
def test_entropic_barycenters_cost_more_than_the_exact_one(rng, method, random_hists):
    shape = (6, 6)
    h = random_hists(rng, 2, shape)
    exact = fixed_support_barycenter(h, shape, log=True)[1]["objective"]
    for reg in (1e-2, 1e-1):
        nu = entropic_barycenter(h, shape, reg, method=method, num_iter_max=500)
        assert nu.shape == shape and nu.min() >= 0 and nu.sum() == pytest.approx(1.0)
        assert true_cost(nu, h, shape) >= exact * (1 - 1e-9)


def test_convolutional_and_ibp_agree(rng, random_hists):
    # same cost (squared Euclidean on linspace(0, 1, n)), same reg: the same entropic barycenter
    shape = (5, 5)
    h = random_hists(rng, 2, shape)
    a = entropic_barycenter(h, shape, 5e-2, method="ibp", num_iter_max=3000, stop_thr=1e-12)
    b = entropic_barycenter(h, shape, 5e-2, method="convolutional", num_iter_max=3000, stop_thr=1e-12)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_pixel_mean_and_errors(rng, random_hists):
    h = random_hists(rng, 2, (3, 3))
    np.testing.assert_allclose(pixel_mean(h, (3, 3), [0.25, 0.75]), 0.25 * h[0] + 0.75 * h[1])
    with pytest.raises(ValueError, match="reg must be positive"):
        entropic_barycenter(h, (3, 3), 0.0)
    with pytest.raises(ValueError, match="method must be"):
        entropic_barycenter(h, (3, 3), 0.1, method="sinkhorn")
    with pytest.raises(ValueError, match="2D grid"):
        entropic_barycenter(random_hists(rng, 2, (2, 2, 2)), (2, 2, 2), 0.1, method="convolutional")
    with pytest.raises(ValueError, match="nu must be"):
        true_cost(-np.ones(9), h, (3, 3))


def test_entropic_matched_stops_at_the_first_reg_within_rtol(rng, random_hists):
    shape = (6, 6)
    h = random_hists(rng, 2, shape)
    exact = fixed_support_barycenter(h, shape, log=True)[1]["objective"]
    res = entropic_matched(h, shape, exact, rtol=0.05, regs=(1e-1, 1e-2, 1e-3), num_iter_max=2000)
    excess = [t["excess"] for t in res["tries"]]
    assert res["reached"] and excess[-1] <= 0.05 and all(e > 0.05 for e in excess[:-1])
    assert res["excess"] == pytest.approx(true_cost(res["nu"], h, shape) / exact - 1, rel=1e-9)
    never = entropic_matched(h, shape, exact, rtol=1e-9, regs=(1e-1,), num_iter_max=200)
    assert not never["reached"] and never["excess"] > 1e-9  # censored: reported as not reached
    with pytest.raises(ValueError, match="decreasing"):
        entropic_matched(h, shape, exact, regs=(1e-3, 1e-2))
