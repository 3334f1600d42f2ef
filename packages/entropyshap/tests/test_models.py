import numpy as np
import pytest
import torch
from entropyshap import GaussianMLP, ngboost_predictor
from entropyshap.data import learned_case


@pytest.fixture(scope="session")
def tiny_mlp():
    X, Y = learned_case(600, np.random.default_rng(0))
    return GaussianMLP(4, 2, hidden=8, seed=0).fit(X, Y, epochs=3, seed=0), X


def test_mlp_outputs_spd_and_diag_twin(tiny_mlp):
    m, X = tiny_mlp
    mean, cov = m(X[:5])
    assert mean.shape == (5, 2) and cov.shape == (5, 2, 2)
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    d = GaussianMLP(4, 2, hidden=8, full_cov=False)
    assert np.all(d(X[:5])[1][:, 0, 1] == 0)


def test_mlp_save_load_roundtrip(tiny_mlp, tmp_path):
    m, X = tiny_mlp
    path = m.save(tmp_path / "m.pt")
    blob = torch.load(path, weights_only=True)  # self-contained, no pickled code
    assert blob["full_cov"] is True
    m2 = GaussianMLP.load(path)
    np.testing.assert_allclose(m2(X[:7])[1], m(X[:7])[1], rtol=1e-6)
    with pytest.raises(FileNotFoundError):
        GaussianMLP.load(tmp_path / "missing.pt")


def test_mlp_bad_input():
    with pytest.raises(ValueError, match="X must be"):
        GaussianMLP(4, 2).fit(np.zeros((10, 3)), np.zeros((10, 2)), epochs=1)
    with pytest.raises(ValueError, match="finite"):
        GaussianMLP(4, 2).fit(np.full((10, 4), np.nan), np.zeros((10, 2)), epochs=1)


def test_ngboost_predictor_rejects_non_ngboost():
    with pytest.raises(TypeError, match="NGBRegressor"):
        ngboost_predictor(object())
