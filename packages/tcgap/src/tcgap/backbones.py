"""Backbones of graded quality for the digits miniature, and the drift meter.

A backbone is any callable X → features (numpy in, numpy out); a timm/open_clip model plugs in through
:class:`TorchBackbone`. Every backbone here is fitted on the *pretraining* split only (disjoint from the
class-IL stream) and standardises its output with that split's statistics.
"""

from __future__ import annotations

import numpy as np


class _Standardised:
    def _fit_scale(self, F):
        self.mean_ = F.mean(0)
        sd = F.std(0)
        self.scale_ = np.where(sd > 1e-8, sd, 1.0)

    def __call__(self, X):
        return (self._raw(np.asarray(X, float)) - self.mean_) / self.scale_


class Raw(_Standardised):
    """Pixels, standardised."""

    name = "raw"

    def fit(self, X):
        self._fit_scale(self._raw(np.asarray(X, float)))
        return self

    def _raw(self, X):
        return X


class PCA(_Standardised):
    """The top-k principal components (of the pretraining split), standardised."""

    def __init__(self, k):
        self.k = int(k)
        self.name = f"pca{self.k}"

    def fit(self, X):
        X = np.asarray(X, float)
        self.mu_ = X.mean(0)
        self.components_ = np.linalg.svd(X - self.mu_, full_matrices=False)[2][: self.k]
        self._fit_scale(self._raw(X))
        return self

    def _raw(self, X):
        return (X - self.mu_) @ self.components_.T


class RandomReLU(_Standardised):
    """ReLU(xA + b) with a fixed Gaussian A (the random "anchor" backbones)."""

    def __init__(self, width, seed=0):
        self.width = int(width)
        self.seed = seed
        self.name = f"relu{self.width}"

    def fit(self, X):
        X = np.asarray(X, float)
        rng = np.random.default_rng(self.seed)
        self.A_ = rng.standard_normal((X.shape[1], self.width)) / np.sqrt(X.shape[1])
        self.b_ = rng.standard_normal(self.width) * 0.5
        self._fit_scale(self._raw(X))
        return self

    def _raw(self, X):
        return np.maximum(X @ self.A_ + self.b_, 0.0)


def MLP(d_in, hidden=128, n_classes=10):
    """A small MLP (torch ``nn.Module``); ``features`` is the hidden representation (the backbone φ)."""
    import torch

    class _MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(),
                                            torch.nn.Linear(hidden, hidden), torch.nn.ReLU())
            self.head = torch.nn.Linear(hidden, n_classes)

        def features(self, x):
            return self.body(x)

        def forward(self, x):
            return self.head(self.body(x))

    return _MLP()


def pretrain_mlp(X, y, *, epochs, hidden=128, lr=1e-3, batch_size=64, seed=0):
    """An MLP trained ``epochs`` epochs (Adam, CE) on the pretraining split; standardised inputs."""
    import torch

    g = torch.Generator().manual_seed(int(seed))
    torch.manual_seed(int(seed))
    Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    net = MLP(Xt.shape[1], hidden, int(yt.max()) + 1)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    for _ in range(int(epochs)):
        for idx in torch.randperm(len(Xt), generator=g).split(batch_size):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx]).backward()
            opt.step()
    return net


class TorchBackbone(_Standardised):
    """Wrap any torch module (or a module's ``features`` method) as a numpy backbone."""

    def __init__(self, module, name="torch", method="features"):
        self.module = module
        self.name = name
        self.method = method

    def fit(self, X):
        self._fit_scale(self._raw(np.asarray(X, float)))
        return self

    def _raw(self, X):
        import torch

        f = getattr(self.module, self.method, self.module)
        with torch.no_grad():
            return f(torch.as_tensor(X, dtype=torch.float32)).double().numpy()


def feature_drift(before, after, X) -> float:
    """Relative representation drift mean‖φ'(x) − φ(x)‖ / mean‖φ(x)‖ over probe inputs ``X``."""
    import torch

    with torch.no_grad():
        Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
        a, b = before(Xt), after(Xt)
    return float((b - a).norm(dim=1).mean() / a.norm(dim=1).mean().clamp_min(1e-30))


def finetune_drift(net, X, y, *, lrs, steps=50, batch_size=32, seed=0, probe=None):
    """Fine-tune copies of ``net`` (body and a fresh head) by SGD at each learning rate; drift of ``features``.

    Same mini-batches and head initialisation for every rate (only the rate differs).
    """
    import copy

    import torch

    Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    probe = Xt if probe is None else torch.as_tensor(np.asarray(probe), dtype=torch.float32)
    out = []
    for lr in lrs:
        g = torch.Generator().manual_seed(int(seed))
        torch.manual_seed(int(seed))
        m = copy.deepcopy(net)
        m.head = torch.nn.Linear(m.head.in_features, int(yt.max()) + 1)
        opt = torch.optim.SGD(m.parameters(), lr=float(lr))
        for _ in range(int(steps)):
            idx = torch.randint(0, len(Xt), (batch_size,), generator=g)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(Xt[idx]), yt[idx]).backward()
            opt.step()
        out.append(feature_drift(net.features, m.features, probe))
    return np.asarray(out)
