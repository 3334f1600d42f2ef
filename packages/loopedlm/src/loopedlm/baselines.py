"""Baselines: the depth-matched feedforward control, the naive re-running loop (what a user of Huginn has
to do without a tracer), and the uniform-causal ColSum baseline."""

from __future__ import annotations

import numpy as np
import torch

from loopedlm.metrics import colsum_concentration, uniform_causal
from loopedlm.model import LoopedConfig, LoopedLM, check_recurrences


def feedforward_control(config: LoopedConfig, depth: int = 12) -> LoopedLM:
    """A plain feedforward transformer of ``depth`` layers with the looped model's width, heads and norm:
    a (0, depth⊗1, 0) model without injection."""
    d = config.to_dict()
    for k in ("prelude", "block", "coda", "recurrences", "injection", "model_type", "transformers_version",
              "architectures"):
        d.pop(k, None)
    return LoopedLM(LoopedConfig(**{**d, "prelude": 0, "block": depth, "coda": 0, "recurrences": 1,
                                    "injection": False}))


@torch.no_grad()
def naive_trace(model: LoopedLM, input_ids, num_recurrences: int, *, seed: int = 0) -> torch.Tensor:
    """Block-layer residuals ``(R, k, B, T, d)`` by re-running the model with 1, 2, ..., R recurrences and
    hooking the block layers' outputs of the last recurrence each time (O(R²) layer passes).
    Z₀ is drawn from a generator seeded with ``seed`` on every run."""
    r = check_recurrences(num_recurrences)
    k = len(model.block)
    out = []
    for t in range(1, r + 1):
        got = []
        hooks = [layer.register_forward_hook(lambda _m, _a, o, got=got: got.append(o[0])) for layer in model.block]
        try:
            model(input_ids, num_recurrences=t, generator=torch.Generator().manual_seed(seed))
        finally:
            for h in hooks:
                h.remove()
        last = got[-k:]
        if model.block_norm is not None:  # Ouro's block-end norm follows the last layer's hook
            last[-1] = model.block_norm(last[-1])
        out.append(torch.stack(last))
    return torch.stack(out)


def uniform_causal_colsum(t: int) -> float:
    """ColSum concentration of uniform causal attention over ``t`` tokens (what the mask alone gives)."""
    return float(colsum_concentration(uniform_causal(t)))


def colsum_profile(attn) -> np.ndarray:
    """Mean ColSum per layer of ``(..., layer, batch, heads, T, T)`` maps → ``(..., layer)``."""
    c = colsum_concentration(attn)
    return c.mean(axis=(-1, -2))
