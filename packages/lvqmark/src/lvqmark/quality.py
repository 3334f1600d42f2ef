"""Generation quality of series ``(N, T, C)`` against real held-out series (TimeGAN/Diffusion-TS metrics,
miniaturised):

- ``discriminative_score``: |accuracy − ½| of a post-hoc GRU classifier (real vs generated) on a held-out
  split (0 = indistinguishable).
- ``predictive_score``: train-on-synthetic, test-on-real MAE of a GRU predicting the next step.
- ``correlation_error``: mean absolute difference of the cross-channel correlation matrices.
- ``mmd``: unbiased RBF-kernel MMD² of the flattened windows (median-heuristic bandwidth from the real
  set), our proxy for context-FID (which needs a pretrained TS2Vec encoder).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["discriminative_score", "predictive_score", "correlation_error", "mmd"]


def _t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float32)


class _GRU(nn.Module):
    def __init__(self, c_in, c_out, hidden):
        super().__init__()
        self.gru = nn.GRU(c_in, hidden, batch_first=True)
        self.out = nn.Linear(hidden, c_out)

    def forward(self, x):
        return self.out(self.gru(x)[0])


def discriminative_score(real, fake, *, steps=300, hidden=16, batch=128, seed=0) -> float:
    real, fake = _t(real), _t(fake)
    n = min(len(real), len(fake))
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([real[:n], fake[:n]])
    y = torch.cat([torch.ones(n), torch.zeros(n)])
    perm = torch.randperm(2 * n, generator=g)
    x, y = x[perm], y[perm]
    cut = int(0.8 * 2 * n)
    torch.manual_seed(seed)
    net = _GRU(x.shape[-1], 1, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(steps):
        i = torch.randint(0, cut, (batch,), generator=g)
        loss = F.binary_cross_entropy_with_logits(net(x[i])[:, -1, 0], y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = ((net(x[cut:])[:, -1, 0] > 0).float() == y[cut:]).float().mean().item()
    return abs(acc - 0.5)


def predictive_score(real, fake, *, steps=300, hidden=16, batch=128, seed=0) -> float:
    real, fake = _t(real), _t(fake)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    net = _GRU(fake.shape[-1], fake.shape[-1], hidden)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(steps):
        xb = fake[torch.randint(0, len(fake), (batch,), generator=g)]
        loss = F.l1_loss(net(xb[:, :-1]), xb[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return F.l1_loss(net(real[:, :-1]), real[:, 1:]).item()


def correlation_error(real, fake) -> float:
    real, fake = np.asarray(real), np.asarray(fake)
    c = real.shape[-1]
    cr = np.corrcoef(real.reshape(-1, c), rowvar=False)
    cf = np.corrcoef(fake.reshape(-1, c), rowvar=False)
    return float(np.abs(cr - cf).mean())


def mmd(real, fake, *, bandwidth=None) -> float:
    """Unbiased MMD² with ``k(a, b) = exp(−‖a − b‖² / (2 h²))``; ``h``: median real–real distance."""
    a = torch.as_tensor(np.asarray(real), dtype=torch.float64).flatten(1)
    b = torch.as_tensor(np.asarray(fake), dtype=torch.float64).flatten(1)
    daa, dbb, dab = torch.cdist(a, a).pow(2), torch.cdist(b, b).pow(2), torch.cdist(a, b).pow(2)
    if bandwidth is None:
        bandwidth = float(daa[~torch.eye(len(a), dtype=torch.bool)].median().sqrt())
    k = lambda d: torch.exp(-d / (2 * bandwidth ** 2))  # noqa: E731
    m, n = len(a), len(b)
    kaa, kbb = k(daa), k(dbb)
    s_aa = (kaa.sum() - kaa.diagonal().sum()) / (m * (m - 1))
    s_bb = (kbb.sum() - kbb.diagonal().sum()) / (n * (n - 1))
    return float(s_aa + s_bb - 2 * k(dab).mean())
