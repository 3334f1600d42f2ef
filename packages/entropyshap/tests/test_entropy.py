import infomeasure as im
import numpy as np
import pytest
from entropyshap.entropy import gaussian_columns, kl_entropy, knn_columns, ksg_total_correlation, mixture_columns
from scipy.stats import multivariate_normal


def _cov(rng, d):
    A = rng.normal(size=(d, d))
    return A @ A.T + 0.5 * np.eye(d)


def test_gaussian_columns_against_scipy(rng):
    d = 4
    C = _cov(rng, d)
    cols = gaussian_columns(C[None])[0]
    assert cols[0] == pytest.approx(multivariate_normal(cov=C).entropy())
    for j in range(d):
        assert cols[1 + j] == pytest.approx(multivariate_normal(cov=C[j, j]).entropy())
        prefix = multivariate_normal(cov=C[: j + 1, : j + 1]).entropy()
        prev = multivariate_normal(cov=C[:j, :j]).entropy() if j else 0.0
        assert cols[1 + d + j] == pytest.approx(prefix - prev)
    assert cols[-1] == pytest.approx(cols[1:1 + d].sum() - cols[0])


def test_mixture_of_one_equals_closed_form(rng):
    d = 3
    C = _cov(rng, d)
    eps = rng.standard_normal((20000, d))
    mc = mixture_columns(np.zeros((1, 1, d)), C[None, None], eps, np.zeros(20000, int))[0]
    np.testing.assert_allclose(mc, gaussian_columns(C[None])[0], atol=0.03)


def test_mixture_entropy_is_not_averaged_entropy(rng):
    """Two well-separated unit Gaussians: H(mixture) ≈ H(component) + log 2, not the average entropy."""
    d = 2
    means = np.array([[[0.0, 0.0], [20.0, 0.0]]])
    covs = np.broadcast_to(np.eye(d), (1, 2, d, d))
    eps = rng.standard_normal((4000, d))
    mc = mixture_columns(means, covs, eps, np.arange(4000) % 2)[0]
    h = gaussian_columns(np.eye(d)[None])[0, 0]
    assert mc[0] == pytest.approx(h + np.log(2), abs=0.03)


@pytest.mark.parametrize("d", [1, 3])
def test_kl_entropy_on_gaussian(rng, d):
    C = _cov(rng, d)
    x = rng.multivariate_normal(np.zeros(d), C, size=5000)
    truth = multivariate_normal(cov=C).entropy()
    assert kl_entropy(x) == pytest.approx(truth, abs=0.06)
    assert kl_entropy(x) == pytest.approx(im.entropy(x, approach="metric", k=4), abs=0.05)


def test_ksg_tc_on_gaussian_and_against_infomeasure(rng):
    C = np.array([[1.0, 0.6, 0.3], [0.6, 1.0, 0.5], [0.3, 0.5, 1.0]])
    x = rng.multivariate_normal(np.zeros(3), C, size=5000)
    truth = -0.5 * np.log(np.linalg.det(C))
    tc = ksg_total_correlation(x)
    assert tc == pytest.approx(truth, abs=0.05)
    assert tc == pytest.approx(im.mutual_information(x[:, 0], x[:, 1], x[:, 2], approach="metric", k=4), abs=0.03)


def test_knn_columns_shape_and_too_few(rng):
    x = rng.normal(size=(500, 2))
    assert knn_columns(x).shape == (6,)
    with pytest.raises(ValueError, match="more than k"):
        kl_entropy(x[:3])


def test_not_spd():
    with pytest.raises(ValueError, match="positive definite"):
        gaussian_columns(np.array([[[1.0, 2.0], [2.0, 1.0]]]))
