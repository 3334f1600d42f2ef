import numpy as np
import pytest
import torch
from tcgap.backbones import PCA, RandomReLU, Raw, TorchBackbone, feature_drift, finetune_drift
from tcgap.data import digits_splits, gaussian_tasks


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Linear(6, 5)
        self.head = torch.nn.Linear(5, 2)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.head(self.body(x))


def test_drift_is_linear_in_lr_for_a_linear_model(rng):
    X = rng.normal(size=(64, 6))
    y = (X[:, 0] > 0).astype(int)
    lrs = np.array([0.001, 0.003, 0.01, 0.03, 0.1])
    d = finetune_drift(Linear(), X, y, lrs=lrs, steps=1, batch_size=64, seed=0)
    assert np.corrcoef(lrs, d)[0, 1] > 0.9999
    np.testing.assert_allclose(d / lrs, d[0] / lrs[0], rtol=1e-3)  # one step: drift = lr · ‖∂φ‖
    assert feature_drift(Linear().features, Linear().features, X) == 0.0


def test_backbones_fit_on_pretraining_split_only():
    s = digits_splits(0)
    Xp = s["pretrain"][0]
    for bb in (Raw().fit(Xp), PCA(10).fit(Xp), RandomReLU(32, seed=1).fit(Xp),
               TorchBackbone(torch.nn.Sequential(torch.nn.Linear(64, 8)), method="forward").fit(Xp)):
        F = bb(Xp)
        np.testing.assert_allclose(F.mean(0), 0, atol=1e-6)
        assert bb(s["test"][0]).shape[0] == len(s["test"][0])
    sizes = {k: len(s[k][0]) for k in ("pretrain", "train", "gamma", "test")}
    assert sum(sizes.values()) == 1797 and sizes["train"] > sizes["test"]
    assert sorted(np.bincount(s["task_of_class"]).tolist()) == [2] * 5


def test_gaussian_tasks_bad_input():
    with pytest.raises(ValueError, match="d must be"):
        gaussian_tasks(np.random.default_rng(0), gamma=1.0, d=4)
    with pytest.raises(ValueError, match="gamma"):
        gaussian_tasks(np.random.default_rng(0), gamma=-1.0)
