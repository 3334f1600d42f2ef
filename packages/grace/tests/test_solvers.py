import numpy as np
import pytest
import torch
from grace import admm_nonneg_lasso, geometry_loss
from scipy.optimize import nnls
from sklearn.linear_model import Lasso


@pytest.mark.parametrize("lam", [0.05, 0.3])
def test_admm_matches_sklearn_positive_lasso(rng, lam):
    D = rng.normal(size=(10, 20))
    Y = rng.normal(size=(5, 20))
    C = admm_nonneg_lasso(Y, D, lam, max_iter=5000, tol=1e-10).numpy()
    for y, c in zip(Y, C, strict=True):
        # sklearn: (1/2n)‖y − Xw‖² + α‖w‖₁ with n = 20 rows, so α = λ / 20
        ref = Lasso(alpha=lam / 20, positive=True, fit_intercept=False, tol=1e-12, max_iter=100000).fit(D.T, y).coef_
        np.testing.assert_allclose(c, ref, atol=1e-5)


def test_admm_at_lambda_zero_is_nnls(rng):
    D = rng.normal(size=(8, 30))
    Y = rng.normal(size=(4, 30))
    C = admm_nonneg_lasso(Y, D, 0.0, max_iter=5000, tol=1e-11).numpy()
    for y, c in zip(Y, C, strict=True):
        np.testing.assert_allclose(c, nnls(D.T, y)[0], atol=1e-5)


def test_admm_woodbury_branch_matches_direct(rng):
    """C > d takes the Woodbury c-update; compare with sklearn on a wide dictionary."""
    D = rng.normal(size=(40, 10))
    y = rng.normal(size=(1, 10))
    c = admm_nonneg_lasso(y, D, 0.2, max_iter=20000, tol=1e-11).numpy()[0]
    ref = Lasso(alpha=0.2 / 10, positive=True, fit_intercept=False, tol=1e-12, max_iter=200000).fit(D.T, y[0]).coef_
    obj = lambda w: 0.5 * np.sum((w @ D - y[0]) ** 2) + 0.2 * w.sum()  # noqa: E731
    assert obj(c) <= obj(ref) + 1e-6 and np.all(c >= 0)


def test_geometry_term_zero_when_cosines_kept_and_positive_otherwise(rng):
    y = torch.tensor(rng.normal(size=(16, 8)))
    assert geometry_loss(y, 3.0 * y).item() == pytest.approx(0.0, abs=1e-12)
    assert geometry_loss(y, torch.tensor(rng.normal(size=(16, 8)))).item() > 1e-3
