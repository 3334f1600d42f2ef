import numpy as np
import pytest
from groupfdr import simulate_sequences
from groupfdr.neural import NeuralBlockMirror, block_permutation_importance, mirror_design

torch = pytest.importorskip("torch")


class _GRU(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gru = torch.nn.GRU(c, 6, batch_first=True)
        self.head = torch.nn.Linear(6, 1)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1]).squeeze(-1)


def test_mirror_design_shapes_and_uncorrelated_copies(rng):
    X = rng.standard_normal((200, 4, 3))
    Xa, ga, info = mirror_design(X, [0, 1, 2], random_state=0)
    assert Xa.shape == (200, 4, 6) and ga.tolist() == [0, 1, 2, 3, 4, 5]
    np.testing.assert_allclose((Xa[..., :3] + Xa[..., 3:]) / 2, X, atol=1e-12)  # the copies mirror X
    assert set(info["scales"]) <= {0.5, 1.0, 2.0}


def test_neural_block_mirror_end_to_end_small():
    X, y, groups, active = simulate_sequences(160, 4, 3, 2, 0.3, random_state=0)
    nbm = NeuralBlockMirror(_GRU(8), groups, q=0.3, n_permutations=1, n_explain=40, n_background=4,
                            random_state=0, offset=0, train_kwargs={"epochs": 5}).fit(X, y)
    assert nbm.mirror_statistics_.shape == (4,) and np.all(np.isfinite(nbm.mirror_statistics_))
    assert nbm.shap_values_.shape == (40, 8)
    assert set(nbm.selected_groups_) <= set(range(4))


def test_callable_trainer_and_linear_model_recovers_coefficients(rng):
    """With a least-squares 'model', the SHAP derivative d± is the fitted coefficient of each copy."""
    X = rng.standard_normal((300, 2, 3))
    y = X[:, :, 0].sum(1) + 0.1 * rng.standard_normal(300)

    def train(Xa, yy):
        A = Xa.reshape(len(Xa), -1)
        b = np.linalg.lstsq(np.column_stack([A, np.ones(len(A))]), yy, rcond=None)[0]
        return lambda Z: Z.reshape(len(Z), -1) @ b[:-1] + b[-1]

    nbm = NeuralBlockMirror(train, [0, 1, 2], q=0.3, n_permutations=1, n_explain=300, random_state=0).fit(X, y)
    d_plus, d_minus = nbm.slopes_
    assert nbm.mirror_statistics_[0] > 0.5 and abs(nbm.mirror_statistics_[1]) < 0.2
    np.testing.assert_allclose(d_plus[0] + d_minus[0], 1.0, atol=0.1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="q must be in"):
        NeuralBlockMirror(_GRU(2), [0], q=1.0)
    with pytest.raises(ValueError, match="n_permutations"):
        NeuralBlockMirror(_GRU(2), [0], n_permutations=0)
    with pytest.raises(TypeError, match="model must be"):
        NeuralBlockMirror(3, [0, 1])
    with pytest.raises(ValueError, match="finite"):
        NeuralBlockMirror(_GRU(4), [0, 1]).fit(np.full((10, 2, 2), np.nan), np.arange(10.0))


def test_block_permutation_importance_finds_the_used_block(rng):
    X = rng.standard_normal((200, 2, 3))
    imp = block_permutation_importance(lambda Z: 3 * Z[:, 0, 1], X, 3 * X[:, 0, 1], [0, 1, 2], random_state=0)
    assert imp[1] > 1 and abs(imp[0]) < 1e-12 and abs(imp[2]) < 1e-12
