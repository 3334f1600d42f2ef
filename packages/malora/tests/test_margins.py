import numpy as np
import pytest
import torch
from malora import closed_form_margins, lambda_max, multiclass_svm, normalized_margins, train_head, train_lora
from malora.data import theory_tasks
from malora.margins import cosine, raw_pair_margins
from scipy.optimize import minimize_scalar
from sklearn.svm import LinearSVC


def test_normalized_margins_match_a_loop(rng):
    W, X, y = rng.normal(size=(4, 7)), rng.normal(size=(30, 7)), rng.integers(0, 4, 30)
    want = [((W[y[i]] - max((W[c] for c in range(4) if c != y[i]), key=lambda w: w @ X[i])) @ X[i])
            / np.linalg.norm(W) for i in range(30)]
    np.testing.assert_allclose(normalized_margins(W, X, y), want, rtol=1e-12)
    np.testing.assert_allclose(normalized_margins(3.0 * W, X, y), want, rtol=1e-12)  # scale-free
    np.testing.assert_allclose(normalized_margins(torch.tensor(W, dtype=torch.float32), X, y), want, rtol=1e-5)


@pytest.mark.parametrize("W,X,y,match", [
    (np.eye(3), np.ones((2, 3)), np.array([0, 3]), "outside the head"),
    (np.full((3, 3), np.nan), np.ones((2, 3)), np.array([0, 1]), "NaN"),
    (np.eye(3), np.ones((0, 3)), np.array([], dtype=int), "empty"),
    (np.eye(3), np.ones((2, 4)), np.array([0, 1]), "features"),
    (np.eye(3), np.ones((2, 3)), np.array([0.5, 1.0]), "integer"),
])
def test_normalized_margins_bad_input(W, X, y, match):
    with pytest.raises((ValueError, TypeError), match=match):
        normalized_margins(W, X, y)


def test_svm_matches_sklearn_crammer_singer(theory):
    t = theory["fts"][1]
    S = multiclass_svm(t.X, t.y, 4)
    assert raw_pair_margins(S, t.X, t.y).min() == pytest.approx(1.0, abs=1e-6)  # hard-margin constraints tight
    ref = LinearSVC(multi_class="crammer_singer", C=1e4, fit_intercept=False, tol=1e-8, max_iter=200_000)
    ref.fit(t.X, t.y)
    assert cosine(S, ref.coef_) > 0.999
    assert normalized_margins(S, t.X, t.y).min() >= normalized_margins(ref.coef_, t.X, t.y).min() - 1e-6


@pytest.fixture(scope="module")
def regime():
    pt, fts = theory_tasks(1, d=40, k=6, T=1, rho=0.0, n_classes=4, n=80, separations=[6.0], pt_separation=6.0,
                           noise=0.5)
    W0 = train_head(pt.X, pt.y, 4)
    ft = fts[0]
    S = multiclass_svm(ft.X, ft.y, 4)
    lams = np.array([1e-5, 1e-4, 1e-3])
    cf = closed_form_margins(lams, W0=W0, X_pt=pt.X, y_pt=pt.y, X_ft=ft.X, y_ft=ft.y, W_svm=S)
    fits = [train_lora(W0, ft.X, ft.y, rank=3, lam=float(lam)) for lam in lams]
    return pt, ft, W0, S, lams, cf, fits


def test_scale_equation_against_brute_force(regime):
    # the closed form's scale s(λ) minimises L(sŴ) + λνs along the SVM direction: check by 1-D search
    pt, ft, W0, S, lams, cf, _ = regime
    Wh = S / np.linalg.norm(S)
    M = raw_pair_margins(Wh, ft.X, ft.y)
    for lam, s in zip(lams, cf["scale"]):
        f = lambda s, lam=lam: np.mean(np.log1p(np.exp(-s * M).sum(1))) + lam * cf["nuclear"] * s  # noqa: E731
        brute = minimize_scalar(f, bounds=(0, 100), method="bounded", options={"xatol": 1e-10}).x
        assert s == pytest.approx(brute, rel=1e-4)


def test_trained_margins_match_the_closed_form(regime):
    pt, ft, W0, S, lams, cf, fits = regime
    assert np.all(lams <= cf["lam_band"])
    pt_err, ft_err = [], []
    for i, r in enumerate(fits):
        W = W0 + r["delta"]
        pt_err.append(abs(normalized_margins(W, pt.X, pt.y).min() / cf["pt"][i] - 1))
        ft_err.append(abs(normalized_margins(W, ft.X, ft.y).min() / cf["ft"][i] - 1))
        # the factor penalty equals the nuclear norm at the optimum (balanced factors)
        A, B = r["A"], r["B"]
        nuc = np.linalg.svd(r["delta"], compute_uv=False).sum()
        assert 0.5 * (np.sum(A**2) + np.sum(B**2)) == pytest.approx(nuc, rel=1e-3)
    assert max(pt_err) < 0.05
    # FT: the leading-order form is approached as λ → 0 (direction converges like 1/log(1/λ))
    assert ft_err[0] < ft_err[-1] and ft_err[0] < 0.2


def test_alignment_only_inside_the_band(regime):
    pt, ft, W0, S, lams, cf, fits = regime
    inside = cosine(fits[0]["delta"], S)
    between = train_lora(W0, ft.X, ft.y, rank=3, lam=float(np.sqrt(cf["lam_band"] * cf["lam_max"])))["delta"]
    above = train_lora(W0, ft.X, ft.y, rank=3, lam=1.5 * cf["lam_max"])["delta"]
    assert cf["lam_band"] < cf["lam_max"] == pytest.approx(lambda_max(W0, ft.X, ft.y))
    assert inside > 0.97
    assert cosine(between, S) < inside - 0.01
    assert np.linalg.norm(above) < 1e-4 * np.linalg.norm(fits[0]["delta"])
    # PT margin > 0 at every λ, shrinking as λ decreases
    pts = [normalized_margins(W0 + r["delta"], pt.X, pt.y).min() for r in fits]
    assert min(pts) > 0 and pts[0] < pts[-1]


def test_closed_form_bad_input(regime):
    pt, ft, W0, *_ = regime
    with pytest.raises(ValueError, match="lam"):
        closed_form_margins([0.0], W0=W0, X_pt=pt.X, y_pt=pt.y, X_ft=ft.X, y_ft=ft.y)
    with pytest.raises(ValueError, match="lam"):
        train_lora(W0, ft.X, ft.y, lam=float("nan"))
