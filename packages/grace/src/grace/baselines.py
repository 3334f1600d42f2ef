"""Baselines: SpLiCE-style per-instance non-negative lasso (batched ADMM, ours) and a top-k SAE.

SpLiCE (Bhalla et al., NeurIPS 2024) solves, for each centred image embedding ``y``,
``min_{c ≥ 0} ½‖Dᵀc − y‖² + λ‖c‖₁`` over the concept dictionary ``D`` (λ = 0 is NNLS).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from grace._base import Decomposer, check_number, topk_mask


def admm_nonneg_lasso(Y, D, lam, *, rho: float = 1.0, max_iter: int = 500, tol: float = 1e-6, init=None,
                      return_state: bool = False):
    """Batched ADMM for ``min_{c ≥ 0} ½‖c D − y‖² + λ ‖c‖₁`` for every row ``y`` of ``Y``.

    Args:
        Y: ``(n, d)`` targets; D: ``(C, d)`` atoms; lam: scalar or ``(n,)`` per-row λ ≥ 0.
        rho: ADMM penalty. max_iter, tol: stop when primal and dual residuals are below ``tol``.
        init: optional ``(w, u)`` warm start.

    Returns:
        ``(n, C)`` non-negative coefficients (the split variable, exactly sparse).

    The c-update solves ``(D Dᵀ + ρI) c = D y + ρ(w − u)`` with one factorisation for the batch,
    by Woodbury through a ``d × d`` system when ``C > d``.
    """
    Y = torch.as_tensor(Y, dtype=torch.float64) if not isinstance(Y, torch.Tensor) else Y
    D = torch.as_tensor(D, dtype=Y.dtype)
    n, C = Y.shape[0], D.shape[0]
    lam = torch.as_tensor(lam, dtype=Y.dtype).reshape(-1, 1).expand(n, 1)
    DY = Y @ D.T
    if C <= D.shape[1]:
        L = torch.linalg.cholesky(D @ D.T + rho * torch.eye(C, dtype=Y.dtype))

        def solve(q):
            return torch.cholesky_solve(q.T, L).T
    else:
        L = torch.linalg.cholesky(rho * torch.eye(D.shape[1], dtype=Y.dtype) + D.T @ D)

        def solve(q):
            return (q - torch.cholesky_solve((q @ D).T, L).T @ D.T) / rho
    w, u = (torch.zeros(n, C, dtype=Y.dtype), torch.zeros(n, C, dtype=Y.dtype)) if init is None else init
    thr = lam / rho
    for it in range(max_iter):
        c = solve(DY + rho * (w - u))
        w_old = w
        w = (c + u - thr).clamp_min(0)
        u = u + c - w
        if it % 10 == 9:
            r = (c - w).abs().max()
            s = rho * (w - w_old).abs().max()
            if r < tol and s < tol:
                break
    return (w, (w, u)) if return_state else w


class SpLiCE(Decomposer):
    """Per-instance non-negative lasso over the concept dictionary (SpLiCE-style), batched ADMM.

    With ``target_l0`` set, λ is found per embedding by bisection so that its L0 is the largest
    count ≤ ``target_l0`` (matched sparsity); otherwise ``l1`` is λ. ``fit`` only estimates the
    image mean (the method is instance-level: every ``transform`` solves an optimisation).
    """

    def __init__(self, dictionary, *, l1: float = 0.25, target_l0=None, rho: float = 1.0, max_iter: int = 300,
                 bisection_steps: int = 18):
        super().__init__(dictionary, target_l0)
        self.l1 = check_number(l1, "l1")
        self.rho = check_number(rho, "rho", minimum=1e-12)
        self.max_iter, self.bisection_steps = int(max_iter), int(bisection_steps)

    def get_params(self) -> dict:
        return {"l1": self.l1, "target_l0": self.target_l0, "rho": self.rho, "max_iter": self.max_iter,
                "bisection_steps": self.bisection_steps}

    def fit(self, Z, y=None):
        self._prepare(Z, fitting=True)
        return self

    def transform(self, Z) -> np.ndarray:
        _, y = self._prepare(Z)
        Y = torch.as_tensor(y, dtype=torch.float64)
        D = torch.as_tensor(self.dictionary.atoms, dtype=torch.float64)
        if self.target_l0 is None:
            return admm_nonneg_lasso(Y, D, self.l1, rho=self.rho, max_iter=self.max_iter).numpy().astype(np.float32)
        # bisection on λ per row: hi gives L0 <= target, lo gives L0 > target
        lo = torch.zeros(len(Y), dtype=torch.float64)
        hi = (Y @ D.T).max(1).values.clamp_min(1e-12) * 1.0001  # above it, c = 0
        best = torch.zeros(len(Y), D.shape[0], dtype=torch.float64)
        state = None
        for _ in range(self.bisection_steps):
            mid = (lo + hi) / 2
            c, state = admm_nonneg_lasso(Y, D, mid, rho=self.rho, max_iter=self.max_iter, init=state,
                                         return_state=True)
            l0 = (c > 1e-10).sum(1)
            ok = l0 <= self.target_l0
            hi = torch.where(ok, mid, hi)
            lo = torch.where(ok, lo, mid)
            best = torch.where(ok[:, None], c, best)
        return best.numpy().astype(np.float32)


class SAEConcepts(Decomposer):
    """A top-k sparse autoencoder on centred embeddings whose features are named by their nearest concept.

    Feature ``f`` (decoder direction ``v_f``, unit norm) is named ``j(f) = argmax_j cos(v_f, atom_j)``;
    concept ``j``'s coefficient is ``Σ_{f: j(f)=j} a_f · max(cos(v_f, atom_j), 0)``, then the top
    ``target_l0`` concepts are kept (default ``k``). Decoding goes through the concept dictionary
    (``inverse_transform`` is the common decoder), not through the SAE's own decoder.
    """

    def __init__(self, dictionary, *, n_features: int = 256, k: int = 8, target_l0=None, epochs: int = 60,
                 batch_size: int = 256, lr: float = 1e-3, random_state=None):
        super().__init__(dictionary, target_l0)
        for name, v in (("n_features", n_features), ("k", k), ("epochs", epochs), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if k > n_features:
            raise ValueError(f"k must be <= n_features ({n_features}), got {k}")
        self.n_features, self.k, self.epochs, self.batch_size = n_features, k, epochs, batch_size
        self.lr = check_number(lr, "lr", minimum=1e-12)
        self.random_state = random_state
        self.enc_ = self.dec_ = None

    def get_params(self) -> dict:
        return {"n_features": self.n_features, "k": self.k, "target_l0": self.target_l0, "epochs": self.epochs,
                "batch_size": self.batch_size, "lr": self.lr, "random_state": self.random_state}

    def _build(self):
        d = self.dictionary.dim
        self.enc_ = nn.Linear(d, self.n_features)
        self.dec_ = nn.Parameter(F.normalize(torch.randn(self.n_features, d), dim=-1))

    def _acts(self, y):
        return topk_mask(F.relu(self.enc_(y)), self.k)

    def fit(self, Z, y=None):
        _, yc = self._prepare(Z, fitting=True)
        seed = 0 if self.random_state is None else int(self.random_state)
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        self._build()
        yt = torch.as_tensor(yc, dtype=torch.float32)
        opt = torch.optim.Adam([*self.enc_.parameters(), self.dec_], lr=self.lr)
        for _ in range(self.epochs):
            perm = torch.randperm(len(yt), generator=gen)
            for i in range(0, len(yt), self.batch_size):
                b = yt[perm[i:i + self.batch_size]]
                rec = self._acts(b) @ F.normalize(self.dec_, dim=-1)
                loss = ((rec - b) ** 2).sum(-1).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        self._name_features()
        return self

    def _name_features(self):
        with torch.no_grad():
            cos = F.normalize(self.dec_, dim=-1) @ torch.as_tensor(self.dictionary.atoms, dtype=torch.float32).T
        self.feature_concept_ = cos.argmax(1)
        self.feature_weight_ = cos.gather(1, self.feature_concept_[:, None])[:, 0].clamp_min(0)

    def transform(self, Z) -> np.ndarray:
        if self.enc_ is None:
            raise RuntimeError("SAEConcepts is not fitted: call fit(Z) first")
        _, y = self._prepare(Z)
        with torch.no_grad():
            a = self._acts(torch.as_tensor(y, dtype=torch.float32)) * self.feature_weight_
            c = torch.zeros(len(a), len(self.dictionary)).index_add_(1, self.feature_concept_, a)
            return topk_mask(c, self.target_l0 or self.k).numpy()

    def _extra_state(self) -> dict:
        return {"enc": self.enc_.state_dict(), "dec": self.dec_.detach()}

    def _load_extra(self, s: dict) -> None:
        self._build()
        self.enc_.load_state_dict(s["enc"])
        self.dec_ = nn.Parameter(s["dec"])
        self._name_features()
