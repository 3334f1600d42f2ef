"""Baselines: Seq-LoRA, averaging, P&M, Fisher merging (all :class:`M2LE` settings), EWC and joint training."""

from __future__ import annotations

import torch

from m2le.data import TensorLoader
from m2le.m2le import M2LE

METHODS = ("seq", "average", "scalar", "pm", "fisher", "m2le", "ewc")

# name -> (merge, tsp): every merging baseline is the same engine with another merge / perturbation
SETTINGS = {
    "seq": ("seq", False),          # Seq-LoRA: m = 1
    "average": ("average", False),  # α = 1/t
    "scalar": ("scalar", False),    # P&M's α* alone (no perturbation): the scalar twin of HIM
    "pm": ("scalar", "pm"),         # P&M: α* + perturbation {1−ε, 1, 1+ε}
    "fisher": ("fisher", False),    # Fisher-weighted merging, no TSP (= HIM without TSP)
    "m2le": ("him", "fisher"),      # M²LE: HIM + TSP
}


class EWCLoRA(M2LE):
    """LoRA trained with the online-EWC penalty ½λ Σ F_prev ⊙ ΔW² (the anchor is the merged W), m = 1.

    λ = 1 makes the penalty exactly HIM's quadratic model of the previous tasks (mean cross-entropy
    per task, so the joint objective is L_cur + ½ΔᵀF_prevΔ).
    """

    def __init__(self, model, lora_config, *, ewc_lambda: float = 1.0, **kw):
        from paperworks import check_float

        super().__init__(model, lora_config, merge="seq", tsp=False, **kw)
        self.ewc_lambda = check_float(ewc_lambda, "ewc_lambda", minimum=0.0)

    @property
    def needs_fisher(self) -> bool:
        return True

    def _penalty(self, peft_model, deltas):
        if self.task == 0:
            return 0.0
        return 0.5 * self.ewc_lambda * sum((self.fisher_prev[p] * d.square()).sum() for p, d in deltas.items())


def make_learner(method: str, model, lora_config, *, damping: float = 1e-8, epsilon: float = 0.5,
                 ewc_lambda: float = 1.0, seed: int | None = None) -> M2LE:
    """A continual learner for ``method`` in :data:`METHODS`."""
    if method == "ewc":
        return EWCLoRA(model, lora_config, ewc_lambda=ewc_lambda, damping=damping, epsilon=epsilon, seed=seed)
    if method not in SETTINGS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    merge, tsp = SETTINGS[method]
    return M2LE(model, lora_config, merge=merge, tsp=tsp, damping=damping, epsilon=epsilon, seed=seed)


def joint_training(model, lora_config, tasks, *, epochs: int, lr: float, batch_size: int = 128, seed: int = 0):
    """The upper bound: one LoRA (same rank) trained on the union of all tasks' data, merged with m = 1."""
    import numpy as np

    X = np.concatenate([t.X for t in tasks])
    y = np.concatenate([t.y for t in tasks])
    learner = M2LE(model, lora_config, merge="seq", tsp=False)
    return learner.learn_task(TensorLoader(X, y, batch_size=batch_size, seed=seed), epochs=epochs, lr=lr)


def accuracy(model, X, y) -> float:
    with torch.no_grad():
        from m2le.fisher import to_model

        x, _ = to_model(model, torch.as_tensor(X), torch.as_tensor(y))
        return float((model(x).argmax(1).cpu().numpy() == y).mean())
