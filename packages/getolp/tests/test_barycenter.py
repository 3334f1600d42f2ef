import numpy as np
import ot
import pytest
import scipy.sparse as sp
from getolp import SolverError, axis_costs, fixed_support_barycenter, grid_cost_matrix, n_variables
from getolp.baselines import full_lp_barycenter, full_lp_n_variables
from hypothesis import given, settings
from hypothesis import strategies as st


def full_objective(h, shape, w, cost="sqeuclidean", C=None):
    """The standard LP, built by POT (independent of the GETO-LP builder)."""
    C = grid_cost_matrix(shape, cost) if C is None else C
    _, sol = ot.lp.barycenter(h.reshape(len(h), -1).T, np.ascontiguousarray(C.T), w, solver="highs", log=True)
    return sol.fun


@pytest.mark.parametrize("shape,m,sparse", [((3, 3), 2, False), ((4, 5), 3, False), ((5, 4), 3, True),
                                            ((7,), 3, False), ((3, 3, 3), 2, False), ((2, 3, 4), 3, True)])
def test_objective_matches_full_lp(rng, shape, m, sparse, random_hists):
    h = random_hists(rng, m, shape, sparse)
    w = rng.dirichlet(np.ones(m))
    nu, info = fixed_support_barycenter(h, shape, w, log=True)
    ref = full_objective(h, shape, w)
    assert abs(info["objective"] - ref) <= 1e-7 * ref
    assert nu.shape == shape
    assert info["exact"] is True


def test_l1_and_custom_axis_costs_match_full_lp(rng, random_hists):
    shape = (4, 3)
    h = random_hists(rng, 3, shape)
    w = rng.dirichlet(np.ones(3))
    _, info = fixed_support_barycenter(h, shape, w, cost="l1", log=True)
    assert abs(info["objective"] - full_objective(h, shape, w, "l1")) <= 1e-7 * info["objective"]
    # an asymmetric per-axis cost checks the direction ν -> μ_m of the plans
    mats = [rng.random((n, n)) * (1 - np.eye(n)) for n in shape]
    nu, info = fixed_support_barycenter(h, shape, w, cost=mats, log=True)
    idx = np.unravel_index(np.arange(12), shape)
    C = mats[0][idx[0][:, None], idx[0][None, :]] + mats[1][idx[1][:, None], idx[1][None, :]]
    np.testing.assert_allclose(C, grid_cost_matrix(shape, mats))
    assert abs(info["objective"] - full_objective(h, shape, w, C=C)) <= 1e-7 * info["objective"]
    for p in info["plans"]:
        assert p.shape == (12, 12)


def test_plans_are_optimal_couplings(rng, random_hists):
    shape, m = (5, 5), 3
    h = random_hists(rng, m, shape, sparse=True).reshape(m, -1)
    w = rng.dirichlet(np.ones(m))
    nu, info = fixed_support_barycenter(h, shape, w, log=True)
    C = grid_cost_matrix(shape)
    nu = nu.ravel()
    total = 0.0
    for wm, p, hm in zip(w, info["plans"], h):
        assert sp.issparse(p) and p.min() >= 0
        np.testing.assert_allclose(np.asarray(p.sum(axis=1)).ravel(), nu, atol=1e-9)
        np.testing.assert_allclose(np.asarray(p.sum(axis=0)).ravel(), hm, atol=1e-9)
        cost = p.multiply(C).sum()
        ref = ot.emd2(nu / nu.sum(), hm, C)
        assert abs(cost - ref) <= 1e-7 * max(ref, info["objective"])
        total += wm * cost
    assert abs(total - info["objective"]) <= 1e-9 * info["objective"]


def test_two_diracs_meet_at_the_midpoint():
    shape = (5, 5)
    h = np.zeros((2, 5, 5))
    h[0, 0, 0] = h[1, 2, 4] = 1.0
    nu, info = fixed_support_barycenter(h, shape, log=True)
    expect = np.zeros(shape)
    expect[1, 2] = 1.0
    np.testing.assert_allclose(nu, expect, atol=1e-9)
    step = 1 / 4  # default coordinates linspace(0, 1, 5)
    assert info["objective"] == pytest.approx((1 * step) ** 2 + (2 * step) ** 2, rel=1e-9)  # both at distance² 5/16


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.integers(1, 3), rows=st.integers(1, 4), cols=st.integers(1, 4))
def test_copies_of_one_histogram_are_their_own_barycenter(seed, m, rows, cols):
    mu = np.random.default_rng(seed).random((rows, cols))
    mu /= mu.sum()
    nu, info = fixed_support_barycenter(np.stack([mu] * m), (rows, cols), log=True)
    assert info["objective"] <= 1e-12
    np.testing.assert_allclose(nu, mu, atol=1e-9)


def test_one_hot_weights_return_that_input(rng, random_hists):
    h = random_hists(rng, 3, (4, 4))
    nu = fixed_support_barycenter(h, (4, 4), weights=[0.0, 1.0, 0.0])
    np.testing.assert_allclose(nu, h[1], atol=1e-9)


@pytest.mark.parametrize("shape,m", [((4, 4), 2), ((8, 8), 3), ((3, 5, 2), 4), ((6,), 1), ((4, 4, 4), 2)])
def test_variable_count_formula(rng, shape, m, random_hists):
    h = random_hists(rng, m, shape)
    _, info = fixed_support_barycenter(h, shape, log=True)
    N, d = int(np.prod(shape)), len(shape)
    assert info["n_variables"] == m * N * sum(shape) + N == n_variables(shape, m)
    assert info["n_constraints"] == (d + 1) * m * N - (m - 1)  # the M - 1 dependent rows are dropped
    if len(set(shape)) == 1:  # cube grids: d M N^(1+1/d) + N
        assert info["n_variables"] == round(d * m * N ** (1 + 1 / d)) + N
    _, ref = full_lp_barycenter(h, shape, log=True)
    assert ref["n_variables"] == m * N * N + N == full_lp_n_variables(shape, m)


def test_reduction_at_32x32():
    assert full_lp_n_variables((32, 32), 4) / n_variables((32, 32), 4) > 15  # N^(1-1/d)/d = 16, less the ν terms


def test_refuses_non_separable_cost(rng, random_hists):
    h = random_hists(rng, 2, (3, 3))
    with pytest.raises(ValueError, match="not separable"):
        fixed_support_barycenter(h, (3, 3), cost="euclidean")
    with pytest.raises(ValueError, match="not separable"):
        axis_costs((3, 3), "euclidean")


def test_euclidean_approximation_is_labelled_and_an_upper_bound(rng, random_hists):
    shape = (4, 4)
    h = random_hists(rng, 2, shape)
    nu, info = fixed_support_barycenter(h, shape, cost="euclidean", approximate=True, log=True)
    opt = full_objective(h, shape, np.full(2, 0.5), "euclidean")
    assert info["exact"] is False and "approximation" in info
    assert info["objective"] >= opt * (1 - 1e-9)
    C = grid_cost_matrix(shape, "euclidean")
    direct = 0.5 * sum(ot.emd2(nu.ravel() / nu.sum(), hm.ravel(), C) for hm in h)
    assert info["objective"] == pytest.approx(direct, rel=1e-7)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_torch_in_torch_out_float64(rng, random_hists, dtype):
    torch = pytest.importorskip("torch")
    h = random_hists(rng, 2, (3, 4))
    t = torch.tensor(h, dtype=getattr(torch, dtype))
    t = t / t.sum(dim=(1, 2), keepdim=True)  # normalised in float32: masses equal only to float32 rounding
    nu_t, info = fixed_support_barycenter(t, (3, 4), weights=torch.tensor([0.3, 0.7], dtype=t.dtype), log=True)
    assert isinstance(nu_t, torch.Tensor) and nu_t.dtype == torch.float64 and nu_t.shape == (3, 4)
    h64 = t.double().numpy()
    ref = full_objective(h64 / h64.sum(axis=(1, 2), keepdims=True), (3, 4), np.array([0.3, 0.7]))
    assert info["objective"] == pytest.approx(ref, rel=1e-6)


def test_float32_numpy_is_accepted_and_float64_out(rng):
    h = rng.random((3, 6, 6)).astype(np.float32)
    h /= h.sum(axis=(1, 2), keepdims=True)
    assert np.ptp(h.astype(np.float64).sum(axis=(1, 2))) > 0  # unequal in float64: the case 0.1 refused
    nu, info = fixed_support_barycenter(h, (6, 6), log=True)
    assert nu.dtype == np.float64
    h64 = h.astype(np.float64) / h.astype(np.float64).sum(axis=(1, 2), keepdims=True)
    assert info["objective"] == pytest.approx(full_objective(h64, (6, 6), np.full(3, 1 / 3)), rel=1e-6)
    with pytest.raises(ValueError, match="equal masses"):  # float64 keeps the tight tolerance
        fixed_support_barycenter(h.astype(np.float64) * np.array([1, 1, 1 + 1e-6])[:, None, None], (6, 6))


def test_flat_histograms_accepted(rng, random_hists):
    h = random_hists(rng, 2, (3, 4))
    np.testing.assert_allclose(fixed_support_barycenter(h.reshape(2, -1), (3, 4)),
                               fixed_support_barycenter(h, (3, 4)), atol=1e-12)


def _good(rng, random_hists):
    return random_hists(rng, 2, (3, 3))


@pytest.mark.parametrize("mutate,kwargs,match", [
    (lambda h: h * np.array([1, -1])[:, None, None], {}, "histograms must be non-negative"),
    (lambda h: np.where(h == h.max(), np.nan, h), {}, "histograms must be finite"),
    (lambda h: h * np.array([1.0, 2.0])[:, None, None], {}, "histograms must have equal masses"),
    (lambda h: h[:, :2, :], {}, "histograms must have shape"),
    (lambda h: h, {"grid_shape": (0, 3)}, "grid_shape"),
    (lambda h: h, {"grid_shape": ()}, "grid_shape"),
    (lambda h: h, {"weights": [0.5, 0.6]}, "weights must sum to 1"),
    (lambda h: h, {"weights": [1.0]}, "weights must have one entry per histogram"),
    (lambda h: h, {"weights": [1.5, -0.5]}, "weights must be finite and non-negative"),
    (lambda h: h, {"cost": "cosine"}, "cost must be one of"),
    (lambda h: h, {"solver": "gurobi"}, "solver must be one of"),
    (lambda h: h, {"time_limit": -1}, "time_limit must be a positive"),
    (lambda h: h, {"time_limit": float("nan")}, "time_limit must be a positive"),
    (lambda h: h, {"highs_options": {"time_limit": 5}}, "time_limit="),
    (lambda h: h, {"highs_options": {"no_such_option": 1}}, "HiGHS refused"),
    (lambda h: h, {"highs_options": {"presolve": "off"}}, "HiGHS refused"),
    (lambda h: h, {"max_variables": 10}, "max_variables=10"),
])
def test_bad_input(rng, mutate, kwargs, match, random_hists):
    h = mutate(_good(rng, random_hists))
    args = {"grid_shape": (3, 3), **kwargs}
    with pytest.raises(ValueError, match=match):
        fixed_support_barycenter(h, **args)


@pytest.mark.parametrize("histograms,kwargs,match", [
    ("0.5 0.5", {}, "histograms must be an array of real numbers, got str"),
    ({"a": [0.5, 0.5]}, {}, "histograms must be an array of real numbers, got dict"),
    ([["0.5", "0.5"], ["0.5", "0.5"]], {}, "histograms must hold real numbers"),
    (np.ones((2, 2), dtype=bool), {}, "histograms must hold real numbers"),
    (np.ones((2, 2), dtype=complex), {}, "histograms must hold real numbers"),
    (np.full((2, 2), 0.5), {"grid_shape": (4.7, 4)}, "grid_shape must be a tuple of ints"),
    (np.full((2, 2), 0.5), {"grid_shape": (2.0,)}, "grid_shape must be a tuple of ints"),
    (np.full((2, 2), 0.5), {"grid_shape": "44"}, "grid_shape must be a tuple of ints"),
    (np.full((2, 2), 0.5), {"grid_shape": (True, 2)}, "grid_shape must be a tuple of ints"),
    (np.full((2, 2), 0.5), {"time_limit": "5"}, "time_limit must be a number"),
    (np.full((2, 2), 0.5), {"time_limit": True}, "time_limit must be a number"),
    (np.full((2, 2), 0.5), {"weights": "0.5,0.5"}, "weights must be an array"),
    (np.full((2, 2), 0.5), {"highs_options": [("presolve", False)]}, "highs_options must be a dict"),
    (np.full((2, 2), 0.5), {"highs_options": {"presolve": None}}, "highs_options\\['presolve'\\]"),
    (np.full((2, 2), 0.5), {"normalize": "yes"}, "normalize must be True or False"),
])
def test_coercions_are_refused(histograms, kwargs, match):
    args = {"grid_shape": (2,), **kwargs}
    with pytest.raises(TypeError, match=match):
        fixed_support_barycenter(histograms, **args)


def test_unequal_masses_normalised_on_request(rng, random_hists):
    h = _good(rng, random_hists) * np.array([1.0, 3.0])[:, None, None]
    nu = fixed_support_barycenter(h, (3, 3), normalize=True)
    assert nu.sum() == pytest.approx(1.0)


def test_solver_time_limit_is_reported_not_retried(rng, random_hists):
    h = random_hists(rng, 3, (12, 12))
    with pytest.raises(SolverError, match="did not solve") as e:
        fixed_support_barycenter(h, (12, 12), time_limit=1e-6)
    assert str(e.value).count("status 1:") == 1 and "presolve" not in str(e.value)  # not retried
