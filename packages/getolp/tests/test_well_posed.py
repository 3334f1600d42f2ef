"""The LP HiGHS sees is well posed: full row rank, scaled, certified by an independent bound, retried."""

import logging

import numpy as np
import ot
import pytest
from getolp import barycenter as bary
from getolp import fixed_support_barycenter, grid_cost_matrix
from getolp.barycenter import SolverError, axis_costs, build_lp, c_transform, dual_bound
from getolp.baselines import full_lp_barycenter, true_cost
from getolp.data import synthetic_histograms
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize("shape,m", [((3, 3), 3), ((2, 3, 2), 2), ((4,), 4)])
def test_dependent_rows_are_exactly_the_dropped_ones(rng, shape, m, random_hists):
    h = random_hists(rng, m, shape).reshape(m, -1)
    w = np.full(m, 1 / m)
    costs = axis_costs(shape)
    _, A_all, _, _ = build_lp(h, shape, w, costs, drop_dependent=False)
    _, A, _, lay = build_lp(h, shape, w, costs)
    dense_all, dense = A_all.toarray(), A.toarray()
    assert np.linalg.matrix_rank(dense_all) == A_all.shape[0] - (m - 1)  # M - 1 dependent rows
    assert np.linalg.matrix_rank(dense) == A.shape[0] == A_all.shape[0] - (m - 1)  # full row rank
    assert (~lay.kept_rows).sum() == m - 1


def _certified_gap(h, shape, w, info, nu):
    upper = true_cost(nu, h, shape, w)  # POT's network simplex: independent of HiGHS
    return upper, (upper - info["dual_bound"]) / max(upper, 1e-12)


@pytest.mark.parametrize("kind,shape,seed", [("blobs", (12, 12), 1), ("blobs", (12, 12), 4), ("blobs", (8, 8), 2),
                                             ("gaussian", (10, 10), 0)])
def test_smooth_inputs_solve_and_are_certified(kind, shape, seed):
    # blobs (12x12, seeds 1 and 4; 8x8 seed 2) are instances that 0.1 reported infeasible
    rng = np.random.default_rng([seed, shape[0]])
    h = synthetic_histograms(rng, 4, shape, kind).reshape(4, -1)
    w = np.full(4, 0.25)
    nu, info = fixed_support_barycenter(h, shape, w, log=True)
    upper, gap = _certified_gap(h, shape, w, info, nu)
    assert info["dual_bound"] <= upper * (1 + 1e-12)
    assert gap <= 1e-9
    assert abs(info["objective"] - upper) <= 1e-9 * upper


@pytest.mark.parametrize("kind", ["equal", "dirac", "disjoint"])
def test_near_degenerate_inputs_match_pot(rng, kind):
    shape = (5, 5)
    h = synthetic_histograms(rng, 3, shape, kind).reshape(3, -1)
    w = rng.dirichlet(np.ones(3))
    nu, info = fixed_support_barycenter(h, shape, w, log=True)
    _, ref = full_lp_barycenter(h, shape, w, log=True)
    step = 1 / 16  # the smallest axis cost: one grid step squared
    assert abs(info["objective"] - ref["objective"]) <= 1e-9 * max(ref["objective"], step)
    upper, _ = _certified_gap(h, shape, w, info, nu)
    assert upper - info["dual_bound"] <= 1e-9 * max(upper, step)
    if kind == "equal":  # copies of one histogram are their own barycenter
        np.testing.assert_allclose(nu.ravel(), h[0], atol=1e-12)
        assert abs(info["objective"]) <= 1e-15


def test_c_transform_matches_brute_force(rng):
    shape = (3, 4, 2)
    costs = axis_costs(shape, "l1")
    C = grid_cost_matrix(shape, "l1")
    g = rng.normal(size=C.shape[0])
    np.testing.assert_allclose(c_transform(g, costs, 0.7), np.min(0.7 * C - g[None, :], axis=1), atol=1e-14)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.integers(1, 3), scale=st.floats(1e-3, 10.0))
def test_dual_bound_is_a_lower_bound_for_any_potentials(seed, m, scale):
    rng = np.random.default_rng(seed)
    shape = (3, 3)
    h = rng.random((m, 9))
    h /= h.sum(axis=1, keepdims=True)
    w = rng.dirichlet(np.ones(m))
    C = grid_cost_matrix(shape)
    _, sol = ot.lp.barycenter(h.T, C, w, solver="highs", log=True)
    g = [scale * rng.normal(size=9) for _ in range(m)]
    assert dual_bound(g, h, w, axis_costs(shape)) <= sol.fun + 1e-12


def test_retry_after_a_non_optimal_status_is_logged(rng, random_hists, monkeypatch, caplog):
    h = random_hists(rng, 2, (4, 4))
    real = bary._linprog
    calls = []

    def flaky(c, A, b, solver, options):
        calls.append((solver, dict(options)))
        res = real(c, A, b, solver, options)
        if len(calls) == 1:
            res.status, res.message = 4, "numerical difficulties (injected)"
        return res

    monkeypatch.setattr(bary, "_linprog", flaky)
    with caplog.at_level(logging.WARNING, logger="getolp.barycenter"):
        nu, info = fixed_support_barycenter(h, (4, 4), log=True)
    assert [a["status"] for a in info["attempts"]] == [4, 0]
    assert calls[1][1]["presolve"] is False
    assert "retrying" in caplog.text and "solved the LP on retry 1" in caplog.text
    assert info["objective"] == pytest.approx(full_lp_barycenter(h, (4, 4), log=True)[1]["objective"], rel=1e-9)


def test_every_attempt_failing_raises_with_the_attempts(rng, random_hists, monkeypatch):
    h = random_hists(rng, 2, (3, 3))
    real = bary._linprog

    def broken(c, A, b, solver, options):
        res = real(c, A, b, solver, options)
        res.status, res.message = 2, "infeasible (injected)"
        return res

    monkeypatch.setattr(bary, "_linprog", broken)
    with pytest.raises(SolverError, match="highs-ipm") as e:
        fixed_support_barycenter(h, (3, 3))
    assert str(e.value).count("injected") == 3


def test_highs_options_reach_highs(rng, random_hists):
    h = random_hists(rng, 2, (4, 4))
    _, info = fixed_support_barycenter(h, (4, 4), log=True, solver="highs-ipm",
                                       highs_options={"presolve": False, "primal_feasibility_tolerance": 1e-8})
    opts = info["attempts"][0]["options"]
    assert opts["presolve"] is False and opts["primal_feasibility_tolerance"] == 1e-8
    assert opts["dual_feasibility_tolerance"] == bary.DEFAULT_HIGHS_OPTIONS["dual_feasibility_tolerance"]
    assert info["solver"] == "highs-ipm"


def test_unscaled_lp_gives_the_same_optimum(rng, random_hists):
    h = random_hists(rng, 3, (5, 5))
    w = rng.dirichlet(np.ones(3))
    a = fixed_support_barycenter(h, (5, 5), w, log=True)[1]
    b = fixed_support_barycenter(h, (5, 5), w, log=True, scale=False)[1]
    assert a["scale"]["b"] == pytest.approx(25.0) and b["scale"] == {"b": 1.0, "c": 1.0}
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-9)
    assert a["dual_bound"] == pytest.approx(b["dual_bound"], rel=1e-9)
