"""The theory schedule for per-task CE heads (**our construction**; the paper's procedure is not public).

For each task, from a warm-up at the initial point:
- smoothness L̂: the top eigenvalue of the loss Hessian at w = 0 (power iteration on Hessian-vector
  products; for softmax CE the curvature is largest at uniform predictions, so this bounds it);
- curvature μ̂: the ridge term λ = 1/(Cn) (the strong-convexity floor);
- tail index α̂: Hill's estimator on the warm-up mini-batch gradient norms;
- step η = 1/L̂; clipping at twice the median warm-up mini-batch gradient norm when α̂ < 2 (heavy
  tails), none otherwise;
- budget: stop once the E_CF estimate ‖∇f‖²/(2μ̂) (the strongly convex sub-optimality bound) falls
  under the E_TC bound exp(−γ̂_min/8), or after ``k_max`` steps.
"""

from __future__ import annotations

import numpy as np

from paperworks.utils import check_float, check_int
from tcgap.learners import TaskHeadCE
from tcgap.tail import tail_index


def _hessian_top(loss_fn, W, iters=30):
    import torch

    v = torch.randn_like(W)
    v /= v.norm()
    lam = 0.0
    for _ in range(iters):
        g = torch.autograd.grad(loss_fn(W), W, create_graph=True)[0]
        hv = torch.autograd.grad((g * v).sum(), W)[0]
        lam = float((hv * v).sum())
        v = hv / (hv.norm() + 1e-300)
    return max(lam, 1e-12)


def theory_train(X, y, n_classes, *, gamma, C=1.0, k_max=400, batch_size=32, warmup=20, seed=0):
    """Train one task's softmax head with the theory schedule; returns (W, b, info)."""
    import torch

    Xt = torch.as_tensor(np.asarray(X), dtype=torch.float64)
    Xa = torch.cat([Xt, torch.ones(len(Xt), 1, dtype=torch.float64)], 1)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    n = len(yt)
    lam = 1.0 / (C * n)
    W = torch.zeros(n_classes, Xa.shape[1], dtype=torch.float64, requires_grad=True)

    def loss(Wm, idx=None):
        Xb, yb = (Xa, yt) if idx is None else (Xa[idx], yt[idx])
        return torch.nn.functional.cross_entropy(Xb @ Wm.T, yb) + 0.5 * lam * (Wm[:, :-1] ** 2).sum()

    # warm-up estimates
    L = _hessian_top(loss, W) + lam
    g = torch.Generator().manual_seed(int(seed))
    norms = []
    for _ in range(warmup):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=g)
        norms.append(float(torch.autograd.grad(loss(W, idx), W)[0].norm()))
    alpha = tail_index(np.asarray(norms) - np.min(norms) + 1e-12, k=max(2, warmup // 4)) if warmup >= 10 else np.inf
    clip = 2.0 * float(np.median(norms)) if alpha < 2 else None
    target = float(np.exp(-gamma / 8))
    eta = 1.0 / L
    steps = 0
    for steps in range(1, k_max + 1):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=g)
        grad = torch.autograd.grad(loss(W, idx), W)[0]
        if clip is not None:
            grad = grad * min(1.0, clip / (float(grad.norm()) + 1e-300))
        with torch.no_grad():
            W -= eta * grad
        if steps % 10 == 0:
            full = torch.autograd.grad(loss(W), W)[0]
            if float(full.norm()) ** 2 / (2 * lam) <= target:
                break
    Wn = W.detach().numpy()
    return Wn[:, :-1].copy(), Wn[:, -1].copy(), {"L_hat": L, "mu_hat": lam, "alpha_hat": float(alpha),
                                                  "lr": eta, "clip": clip, "steps": steps}


class TheoryScheduleCE(TaskHeadCE):
    """Per-task CE heads trained with :func:`theory_train` (γ̂_min given, estimated on a held-out split)."""

    def __init__(self, gamma=8.0, C=1.0, k_max=400, batch_size=32, random_state=0):
        self.gamma = gamma
        self.C = C
        self.k_max = k_max
        self.batch_size = batch_size
        self.random_state = random_state

    def _validate_params_(self):
        check_float(self.gamma, "gamma", minimum=0)
        check_float(self.C, "C", minimum=0, open_minimum=True)
        check_int(self.k_max, "k_max")
        check_int(self.batch_size, "batch_size")

    def _reset(self, d):
        super()._reset(d)
        self.schedule_ = []

    def _learn(self, X, y):
        cls = np.unique(y)
        W, b, info = theory_train(X, np.searchsorted(cls, y), cls.size, gamma=self.gamma, C=self.C, k_max=self.k_max,
                                  batch_size=self.batch_size, seed=(self.random_state or 0) + len(self.heads_))
        self.schedule_.append(info)
        for k, c in enumerate(cls):
            self.heads_[c.item()] = (W[k], b[k])


def incremental_accuracies(learner, tasks_train, tasks_test) -> np.ndarray:
    """Class-IL accuracy on the test samples of the tasks seen so far, after each task (learner is refitted)."""
    from sklearn.base import clone

    m = clone(learner)
    out = []
    for t, (X, y) in enumerate(tasks_train):
        m.partial_fit(X, y)
        Xs = np.concatenate([tasks_test[s][0] for s in range(t + 1)])
        ys = np.concatenate([tasks_test[s][1] for s in range(t + 1)])
        out.append(float(np.mean(m.predict(Xs) == ys)))
    return np.asarray(out)
