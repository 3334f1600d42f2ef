"""Training in the theory regime: the pretrained head W₀ and rank-r LoRA adapters (PEFT), full-batch L-BFGS.

The adapter of task t minimises

.. math:: \\frac1n\\sum_i \\mathrm{CE}\\big((W_0 + B_tA_t)x_i, y_i\\big) + \\frac\\lambda2\\big(\\lVert A_t\\rVert_F^2
          + \\lVert B_t\\rVert_F^2\\big)

over the factors of a PEFT ``LoraConfig(r, lora_alpha=r)`` adapter (scaling 1) on the head of a
``LinearHead`` module; W₀ is frozen. The minimum of the factor penalty over factorisations of ΔW is
λ‖ΔW‖_* (nuclear norm), which is what :mod:`malora.margins` builds on.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from malora.margins import as_matrix, check_data
from paperworks import check_float, check_int


class LinearHead(nn.Module):
    """A bias-free C-way linear head ``head`` (C, d): the model PEFT adapts in the theory regime."""

    def __init__(self, W0):
        super().__init__()
        W0 = torch.as_tensor(as_matrix(W0, "W0"), dtype=torch.float64)
        self.head = nn.Linear(W0.shape[1], W0.shape[0], bias=False, dtype=torch.float64)
        with torch.no_grad():
            self.head.weight.copy_(W0)

    def forward(self, x):
        return self.head(x)


def _lbfgs(params, closure_loss, max_iter: int, tol: float) -> int:
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=max_iter, history_size=50, tolerance_grad=tol,
                            tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = closure_loss()
        loss.backward()
        return loss

    opt.step(closure)
    return int(opt.state[opt._params[0]].get("n_iter", 0))


def train_head(X, y, n_classes: int, *, weight_decay: float = 1e-3, max_iter: int = 500) -> np.ndarray:
    """The pretrained head: softmax regression with ℓ2 penalty (μ/2)‖W‖², full-batch L-BFGS from 0.

    Its rows lie in the span of the pretraining inputs (zero init, gradients in that span).
    """
    check_float(weight_decay, "weight_decay", minimum=0.0)
    X = as_matrix(X, "X")
    Xt = torch.as_tensor(X)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    W = torch.zeros(n_classes, X.shape[1], dtype=torch.float64, requires_grad=True)
    _lbfgs([W], lambda: nn.functional.cross_entropy(Xt @ W.T, yt) + 0.5 * weight_decay * (W**2).sum(),
           max_iter, 1e-12)
    return W.detach().numpy()


def lora_model(W0, *, rank: int = 4, seed: int = 0, adapter_name: str = "default"):
    """A ``peft.PeftModel`` around :class:`LinearHead` (W₀) with a fresh rank-``rank`` LoRA on ``head``."""
    from peft import LoraConfig, get_peft_model

    check_int(rank, "rank", minimum=1)
    torch.manual_seed(seed)
    cfg = LoraConfig(r=rank, lora_alpha=rank, target_modules=["head"], lora_dropout=0.0, bias="none")
    return get_peft_model(LinearHead(W0), cfg, adapter_name=adapter_name)


def train_lora(W0, X, y, *, rank: int = 4, lam: float, seed: int = 0, max_iter: int = 2000, tol: float = 1e-10,
               model=None, adapter_name: str = "default") -> dict:
    """Train one LoRA adapter on (X, y) with frozen W₀ (PEFT, L-BFGS); return its factors and ΔW.

    Args:
        W0: (C, d) pretrained head.
        X, y: the task's training data.
        rank: LoRA rank r. lam: the factor penalty λ > 0.
        model: an existing ``PeftModel`` from :func:`lora_model` to train ``adapter_name`` of
            (default: a fresh one).

    Returns:
        ``{"A": (r, d), "B": (C, r), "delta": (C, d) = B A, "iters": int, "model": PeftModel}``.
    """
    check_float(lam, "lam", minimum=0.0, open_minimum=True)
    W0 = as_matrix(W0, "W0")
    X, y = check_data(X, y, W0.shape[0], W0.shape[1], "training data")
    if model is None:
        model = lora_model(W0, rank=rank, seed=seed, adapter_name=adapter_name)
    model.set_adapter(adapter_name)
    layer = model.base_model.model.head
    A, B = layer.lora_A[adapter_name].weight, layer.lora_B[adapter_name].weight
    for p in (A, B):
        p.data = p.data.double()
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

    def loss():
        return nn.functional.cross_entropy(model(Xt), yt) + 0.5 * lam * ((A**2).sum() + (B**2).sum())

    iters = _lbfgs([A, B], loss, max_iter, tol)
    scale = layer.scaling[adapter_name]
    with torch.no_grad():
        delta = (layer.get_delta_weight(adapter_name)).double().numpy()
    return {"A": A.detach().numpy() * scale, "B": B.detach().numpy(), "delta": delta, "iters": iters, "model": model}
