import itertools

import numpy as np
import pytest
import torch
from malora import merge, mixing_coefficients, multiclass_svm, normalized_margins
from malora.data import theory_tasks
from malora.lora import train_head, train_lora


def union_min(W0, deltas, alpha, sets):
    W = merge(W0, deltas, alpha)
    return min(normalized_margins(W, X, y).min() for X, y in sets)


def test_alpha_at_least_as_good_as_a_brute_force_grid(theory):
    W0, D, pt, fts = theory["W0"], theory["deltas"], theory["pt"], theory["fts"]
    cal = [(t.X, t.y) for t in fts]
    base = (pt.X, pt.y)
    alpha, info = mixing_coefficients(W0, D, cal, base_data=base, method="program", log=True)
    grid = np.linspace(0.0, 3.0, 13)
    best = max(union_min(W0, D, np.array(a), cal + [base]) for a in itertools.product(grid, repeat=3))
    got = union_min(W0, D, alpha, cal + [base])
    assert got >= best - 1e-6
    assert info["min_margin"] == pytest.approx(got, rel=1e-9)
    assert info["method"] == "program" and info["positive"] and len(info["task_margins"]) == 4


def exact_orthogonal():
    pt, fts = theory_tasks(3, d=30, k=5, T=3, rho=0.0, n_classes=3, n=40, separations=[4.0, 6.0, 8.0],
                           pt_separation=5.0, noise=0.5)
    W0 = multiclass_svm(pt.X, pt.y, 3)
    D = [multiclass_svm(t.X, t.y, 3) * s for t, s in zip(fts, (0.5, 1.0, 2.0))]  # rows inside each S_t
    return pt, fts, W0, D


def test_closed_form_equals_the_program_at_rho_0():
    pt, fts, W0, D = exact_orthogonal()
    cal = [(t.X, t.y) for t in fts]
    a_cf, info = mixing_coefficients(W0, D, cal, base_data=(pt.X, pt.y), log=True)
    assert info["method"] == "closed_form"  # "auto" detects exact orthogonality
    a_pr = mixing_coefficients(W0, D, cal, base_data=(pt.X, pt.y), method="program", tol=1e-9)
    np.testing.assert_allclose(a_pr, a_cf, rtol=1e-3)
    # the optimum equalises every task's margin (and the base's)
    np.testing.assert_allclose(info["task_margins"], info["task_margins"][0], rtol=1e-8)


def test_unbounded_without_base_data_is_capped():
    pt, fts, W0, D = exact_orthogonal()
    cal = [(t.X, t.y) for t in fts]
    for method in ("closed_form", "program"):
        a, info = mixing_coefficients(W0, D, cal, method=method, alpha_max=50.0, log=True)
        assert info["capped"] and a.max() == pytest.approx(50.0, rel=1e-4)


def test_merged_margins_positive_at_low_overlap():
    # claim 3 at ρ = 0.1: trained adapters, MaLoRA's α, every task's calibration data separated
    pt, fts = theory_tasks(5, d=48, k=6, T=3, rho=0.1, n_classes=4, n=60, separations=[6.0] * 3,
                           pt_separation=6.0, noise=0.5)
    W0 = train_head(pt.X, pt.y, 4)
    D = [train_lora(W0, t.X, t.y, rank=3, lam=1e-3)["delta"] for t in fts]
    alpha, info = mixing_coefficients(W0, D, [(t.X, t.y) for t in fts], base_data=(pt.X, pt.y), log=True)
    assert min(info["task_margins"]) > 0
    uni = union_min(W0, D, np.full(3, 1 / 3), [(t.X, t.y) for t in fts] + [(pt.X, pt.y)])
    assert info["min_margin"] >= uni


def test_merge_types_and_factor_pairs(rng):
    W0 = rng.normal(size=(3, 5))
    B, A = rng.normal(size=(3, 2)), rng.normal(size=(2, 5))
    D2 = rng.normal(size=(3, 5))
    W = merge(W0, [(B, A), D2], [0.5, 2.0])
    np.testing.assert_allclose(W, W0 + 0.5 * B @ A + 2.0 * D2)
    Wt = merge(torch.tensor(W0), [torch.tensor(B @ A), torch.tensor(D2)], np.array([0.5, 2.0]))
    assert torch.is_tensor(Wt) and np.allclose(Wt.numpy(), W)


def test_bad_input(theory):
    W0, D, fts = theory["W0"], theory["deltas"], theory["fts"]
    cal = [(t.X, t.y) for t in fts]
    with pytest.raises(ValueError, match=r"deltas\[1\] has shape"):
        mixing_coefficients(W0, [D[0], D[1][:, :-1], D[2]], cal)
    with pytest.raises(ValueError, match="outside the head"):
        mixing_coefficients(W0, D, [cal[0], (cal[1][0], cal[1][1] + 10), cal[2]])
    with pytest.raises(ValueError, match="empty"):
        mixing_coefficients(W0, D, [cal[0], (cal[1][0][:0], cal[1][1][:0]), cal[2]])
    bad = D[2].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        mixing_coefficients(W0, [D[0], D[1], bad], cal)
    with pytest.raises(ValueError, match="task B has no positive margin"):
        mixing_coefficients(W0, [D[0], -D[1], D[2]], cal, names=["task A", "task B", "task C"])
    with pytest.raises(ValueError, match="one per delta"):
        mixing_coefficients(W0, D, cal[:2])
    with pytest.raises(ValueError, match="method"):
        mixing_coefficients(W0, D, cal, method="grid")
    with pytest.raises(TypeError):
        mixing_coefficients(W0, D, cal, alpha_max="10")


def test_homogeneous_program_equals_bisection(theory):
    from malora.mixing import _pairs, gram_root, solve_program

    W0, D, pt, fts = theory["W0"], theory["deltas"], theory["pt"], theory["fts"]
    a, B = _pairs(W0, D, [(t.X, t.y) for t in fts] + [(pt.X, pt.y)])
    R = gram_root([W0, *D])
    lo, hi = np.zeros(3), np.full(3, 10.0)
    x1, g1, p1 = solve_program(a, B, R, lo, hi, how="bisection", tol=1e-8)
    x2, g2, p2 = solve_program(a, B, R, lo, hi, how="homogeneous")
    assert p1 and p2 and g2 == pytest.approx(g1, rel=1e-5)
    np.testing.assert_allclose(x2, x1, rtol=1e-2)
