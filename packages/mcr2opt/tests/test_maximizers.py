import math

import pytest
import torch
from mcr2opt import closed_form_maximizer, critical_lam, distance_to_maximizers, local_constants, value_and_grad
from mcr2opt.ascent import radial_directions
from mcr2opt.maximizers import infer_ranks, maximizer_singular_values

EPS, LAM = 0.5, 0.1  # as the maximizer fixture in conftest.py


def test_gradient_vanishes_at_the_closed_form_maximizer(maximizer):
    Z, y = maximizer
    _, g = value_and_grad(Z, y, eps=EPS, lam=LAM)
    assert float(g.norm()) < 1e-10


def test_singular_values_solve_the_stationarity_equation():
    n_k, n, d = 25, 100, 16
    s = maximizer_singular_values([n_k] * 4, d, eps=EPS, lam=LAM)[0]
    a, ak, x = d / (n * EPS**2), d / (n_k * EPS**2), s**2
    assert abs(0.5 * a * (1 / (1 + a * x) - 1 / (1 + ak * x)) - LAM / 2) < 1e-12


def test_small_random_perturbations_never_increase_F(maximizer, gen):
    Z, y = maximizer
    F0 = float(value_and_grad(Z, y, eps=EPS, lam=LAM)[0])
    for r in (1e-4, 1e-3, 1e-2):
        for _ in range(30):
            D = torch.randn(Z.shape, generator=gen, dtype=torch.float64)
            assert float(value_and_grad(Z + r * D / D.norm(), y, eps=EPS, lam=LAM)[0]) < F0


def test_rotated_maximizer_is_at_distance_zero(maximizer, gen):
    Z, y = maximizer
    Q = torch.linalg.qr(torch.randn(8, 8, generator=gen, dtype=torch.float64))[0]
    P = torch.linalg.qr(torch.randn(10, 10, generator=gen, dtype=torch.float64))[0]
    Zr = Z @ Q
    Zr[:10] = P @ Zr[:10]    # the per-class orthogonal freedom on the sample side too
    assert distance_to_maximizers(Zr, y, eps=EPS, lam=LAM) < 1e-12


def test_planted_normal_perturbation_is_at_its_size(maximizer, gen):
    Z, y = maximizer
    for t in (1e-6, 1e-3, 1e-1):
        R = radial_directions(Z, y)[1]
        assert distance_to_maximizers(Z + t * R, y, eps=EPS, lam=LAM) == pytest.approx(t, rel=1e-8)
    # a rank-one component in the unused feature directions: only its part off the class's
    # sample-side subspace is normal (V_k wᵀ with w ⟂ U is a rotation of U_k, a tangent move)
    Zs, ys = closed_form_maximizer([10, 10], 8, eps=EPS, lam=LAM, ranks=[2, 3], generator=gen)
    u = torch.linalg.svd(Zs, full_matrices=True)[2][5:].T[:, 0]     # ⟂ every class subspace
    V = torch.linalg.svd(Zs[:10], full_matrices=False)[0][:, :2]     # class 0's sample side
    w = torch.randn(10, generator=gen, dtype=torch.float64)
    w_normal = w - V @ (V.T @ w)
    for vec, expect in ((w_normal / w_normal.norm(), 1.0), (w / w.norm(), float(w_normal.norm() / w.norm()))):
        D = torch.zeros_like(Zs)
        D[:10] = 1e-4 * torch.outer(vec, u)
        assert distance_to_maximizers(Zs + D, ys, eps=EPS, lam=LAM) == pytest.approx(1e-4 * expect, rel=1e-4)


def test_distance_is_an_upper_bound_tight_near_the_set(maximizer, gen):
    Z, y = maximizer
    D = torch.randn(Z.shape, generator=gen, dtype=torch.float64)
    D /= D.norm()
    for r in (1e-6, 1e-3):
        dist, P = distance_to_maximizers(Z + r * D, y, eps=EPS, lam=LAM, return_point=True)
        assert dist <= r * (1 + 1e-9)   # Z itself is a point of the set
        assert float((Z + r * D - P).norm()) == pytest.approx(dist, rel=1e-10)
        _, gP = value_and_grad(P, y, eps=EPS, lam=LAM)   # the returned point is a maximizer
        assert float(gP.norm()) < 1e-9
    # first-order tightness: the ratio dist/r settles as r shrinks
    a = distance_to_maximizers(Z + 1e-4 * D, y, eps=EPS, lam=LAM) / 1e-4
    b = distance_to_maximizers(Z + 1e-7 * D, y, eps=EPS, lam=LAM) / 1e-7
    assert abs(a - b) < 1e-3


def test_ranks_inferred_as_built(gen):
    Z, y = closed_form_maximizer([10, 12, 9], 10, eps=EPS, lam=LAM, ranks=[2, 4, 3], generator=gen)
    assert infer_ranks(Z, y, eps=EPS, lam=LAM) == [2, 4, 3]
    _, g = value_and_grad(Z, y, eps=EPS, lam=LAM)
    assert float(g.norm()) < 1e-10


def test_local_constants_bounded_and_control_degenerate(maximizer):
    Z, y = maximizer
    rows = local_constants(Z, y, eps=EPS, lam=LAM, radii=[1e-4, 1e-2], n_dirs=3)
    assert rows[0]["kappa"] == pytest.approx(rows[1]["kappa"], rel=0.05)
    assert all(r["min_gap"] > 0 and r["pl"] > 0 and r["qg"] > 0 for r in rows)
    lc = critical_lam(10, 20, 8, eps=EPS)
    Zc, yc = closed_form_maximizer([10, 10], 8, eps=EPS, lam=lc)
    rc = local_constants(Zc, yc, eps=EPS, lam=lc, radii=[1e-4, 1e-2], n_dirs=3)
    assert rc[0]["kappa"] > 30 * rc[1]["kappa"]     # κ̂ ∝ 1/r without an error bound


def test_bad_input():
    with pytest.raises(ValueError, match="lam must be > 0"):
        closed_form_maximizer([5, 5], 4, eps=EPS, lam=0.0)
    with pytest.raises(ValueError, match="too large"):
        closed_form_maximizer([5, 5], 4, eps=EPS, lam=10.0)
    with pytest.raises(ValueError, match="ranks must sum"):
        closed_form_maximizer([5, 5], 4, eps=EPS, lam=LAM, ranks=[3, 3])
    with pytest.raises(ValueError, match="class_sizes"):
        closed_form_maximizer([0, 5], 4, eps=EPS, lam=LAM)
    with pytest.raises(ValueError, match="eps"):
        closed_form_maximizer([5, 5], 4, eps=-1.0, lam=LAM)
    assert math.isfinite(critical_lam(5, 10, 4, eps=EPS))


def test_hessian_is_nsd_with_nullity_the_set_dimension(maximizer):
    from mcr2opt.maximizers import hessian_spectrum, manifold_dimension

    Z, y = maximizer
    ev = hessian_spectrum(Z, y, eps=EPS, lam=LAM)
    scale = float(ev.abs().max())
    assert float(ev.max()) < 1e-6 * scale
    null = int((ev.abs() <= 1e-6 * scale).sum())
    assert null == manifold_dimension([10, 10], 8, [4, 4])
    # the error-bound constant to first order equals the sampled one along the worst (radial) direction
    kappa_h = 1 / float(-ev[ev < -1e-6 * scale].max())
    kappa = local_constants(Z, y, eps=EPS, lam=LAM, radii=[1e-5], n_dirs=0)[0]["kappa"]
    assert kappa == pytest.approx(kappa_h, rel=1e-3)
    lc = critical_lam(10, 20, 8, eps=EPS)
    Zc, yc = closed_form_maximizer([10, 10], 8, eps=EPS, lam=lc)
    evc = hessian_spectrum(Zc, yc, eps=EPS, lam=lc)
    assert int((evc.abs() <= 1e-6 * float(evc.abs().max())).sum()) > null
