"""The optimizers compared: AdamW, torch.optim.Muon (+AdamW for the rest) and GraphMuon.

Muon and GraphMuon get the same parameter split: the graph weights that :func:`graphmuon.attach`
registers go to the matrix optimizer, every other parameter to AdamW at the same learning rate.
"""

from __future__ import annotations

import torch
from torch import nn

from graphmuon.capture import attach, graph_weights
from graphmuon.optimizer import GraphMuon

OPTIMIZERS = ("adamw", "muon", "graphmuon")


def make_optimizers(name: str, model: nn.Module, lr: float, *, momentum: float = 0.95, weight_decay: float = 0.0,
                    graphmuon_kwargs: dict | None = None) -> list[torch.optim.Optimizer]:
    """The optimizer(s) ``name`` for ``model`` at learning rate ``lr`` (step all of them each iteration)."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if name == "adamw":
        return [torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)]
    if name == "muon":
        mats = [w for _, w, _, _ in graph_weights(model)]
        ids = {id(w) for w in mats}
        rest = [p for p in model.parameters() if id(p) not in ids]
        opts = [torch.optim.Muon(mats, lr=lr, momentum=momentum, weight_decay=weight_decay,
                                 adjust_lr_fn="match_rms_adamw")]
        if rest:
            opts.append(torch.optim.AdamW(rest, lr=lr, weight_decay=weight_decay))
        return opts
    opt = GraphMuon(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay,
                    adamw_weight_decay=weight_decay, **(graphmuon_kwargs or {}))
    attach(model, opt)
    return [opt]
