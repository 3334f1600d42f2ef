"""Training loops shared by the method and the baselines (same optimiser, epochs and data for all)."""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.loader import DataLoader

log = logging.getLogger(__name__)

__all__ = ["train_graph_classifier", "tune_on_ladder", "graph_accuracy", "graph_loss", "train_node_classifier", "node_accuracy"]


def _check_finite(loss: torch.Tensor, epoch: int, name: str) -> None:
    if not torch.isfinite(loss):
        raise FloatingPointError(f"{name}: the loss became {float(loss)} at epoch {epoch}; stopping")


def train_graph_classifier(model: nn.Module, train, *, epochs: int, lr: float = 0.01, weight_decay: float = 0.0,
                           batch_size: int = 32, seed: int = 0, name: str = "model", val=None,
                           patience: int | None = None, log: dict | None = None,
                           stop_on_nonfinite: bool = False, min_delta: float = 0.0) -> nn.Module:
    """Adam on cross-entropy over PyG mini-batches; returns the model in eval mode.

    With ``val`` (a list of graphs): after every epoch the validation cross-entropy is measured, the
    weights with the lowest one are kept (earliest epoch on ties) and restored at the end, and training
    stops once ``patience`` epochs pass without improvement (early stopping; ``epochs`` is then the cap).
    An epoch improves on the best only if its validation loss is lower by more than ``min_delta``
    (nats; on separable data the loss otherwise keeps shrinking by ever smaller amounts and early
    stopping never fires). The loss, not the accuracy, decides: it keeps falling on the accuracy plateaus where these models
    sit at chance for a while. ``log`` receives ``epochs_run``, ``best_epoch``, ``best_val_loss`` and
    ``best_val_acc`` (the accuracy of the kept weights) and ``diverged``.

    A non-finite training loss raises :class:`FloatingPointError`; with ``stop_on_nonfinite`` (and
    ``val``) it ends training instead, the best validated weights restored and ``diverged`` logged.
    """
    g = torch.Generator().manual_seed(seed)
    loader = DataLoader(train, batch_size=batch_size, shuffle=True, generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_epoch, best_state, epoch, diverged = math.inf, -1, None, -1, False
    for epoch in range(epochs):
        model.train()
        for b in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(b.x, b.edge_index, b.batch), b.y)
            if stop_on_nonfinite and val is not None and not torch.isfinite(loss):
                diverged = True
                break
            _check_finite(loss, epoch, name)
            loss.backward()
            opt.step()
        if diverged:
            break
        if val is not None:
            vloss = graph_loss(model, val)
            if vloss < best - min_delta:
                best, best_epoch = vloss, epoch
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            elif patience is not None and epoch - best_epoch >= patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    if log is not None:
        log.update(epochs_run=epoch + 1, best_epoch=best_epoch + 1, best_val_loss=best, diverged=diverged,
                   best_val_acc=graph_accuracy(model, val) if val is not None else math.nan)
    return model.eval()


@torch.no_grad()
def graph_loss(model: nn.Module, data, batch_size: int = 128) -> float:
    """Mean cross-entropy over the graphs of ``data``."""
    model.eval()
    total, count = 0.0, 0
    for b in DataLoader(data, batch_size=batch_size):
        total += float(F.cross_entropy(model(b.x, b.edge_index, b.batch), b.y, reduction="sum"))
        count += b.num_graphs
    return total / max(count, 1)


@torch.no_grad()
def graph_accuracy(model: nn.Module, data, batch_size: int = 128) -> float:
    model.eval()
    correct = total = 0
    for b in DataLoader(data, batch_size=batch_size):
        correct += int((model(b.x, b.edge_index, b.batch).argmax(-1) == b.y).sum())
        total += b.num_graphs
    return correct / max(total, 1)


def _node_batches(graphs, mask_key: str, batch_size: int, shuffle: bool, generator=None):
    return DataLoader(graphs, batch_size=batch_size, shuffle=shuffle, generator=generator)


def train_node_classifier(model: nn.Module, graphs, *, mask_key: str, epochs: int, lr: float = 0.01,
                          weight_decay: float = 0.0, batch_size: int = 32, seed: int = 0,
                          name: str = "model") -> nn.Module:
    """Node classification on the nodes where ``graph[mask_key]`` is true (one or many graphs)."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    for epoch in range(epochs):
        for b in _node_batches(graphs, mask_key, batch_size, True, g):
            opt.zero_grad()
            m = b[mask_key]
            out = model(b.x, b.edge_index, b.batch)
            loss = F.cross_entropy(out[m], b.y[m])
            _check_finite(loss, epoch, name)
            loss.backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def node_accuracy(model: nn.Module, graphs, *, mask_key: str, batch_size: int = 128) -> float:
    model.eval()
    correct = total = 0
    for b in _node_batches(graphs, mask_key, batch_size, False):
        m = b[mask_key]
        correct += int((model(b.x, b.edge_index, b.batch).argmax(-1)[m] == b.y[m]).sum())
        total += int(m.sum())
    return correct / max(total, 1)


def tune_on_ladder(score, ladder, start) -> tuple[float, dict, bool]:
    """Pick the value of ``ladder`` with the lowest ``score(value)``, extending the grid off an edge.

    ``start`` (a subset of ``ladder``, at least two values) is scored first. While the best value is the
    smallest (largest) one scored and ``ladder`` has a smaller (larger) value, that next value is scored
    too, so the chosen value ends up interior to the scored grid unless it is an end of ``ladder``.
    Ties go to the smaller value. Returns ``(best, {value: score}, interior)``; a non-finite score
    (a diverged run) counts as worst.
    """
    ladder = sorted(float(v) for v in ladder)
    start = sorted({float(v) for v in start})
    if len(start) < 2:
        raise ValueError(f"start needs at least two values to bracket an optimum, got {start}")
    missing = [v for v in start if not any(math.isclose(v, w, rel_tol=1e-9) for w in ladder)]
    if missing:
        raise ValueError(f"start values {missing} are not on the ladder {ladder}")
    idx = sorted({min(range(len(ladder)), key=lambda i: abs(ladder[i] - v)) for v in start})
    scores: dict[float, float] = {}

    def key(i):
        s = scores[ladder[i]]
        return (s if math.isfinite(s) else math.inf, i)

    for i in idx:
        scores[ladder[i]] = float(score(ladder[i]))
    while True:
        best = min(idx, key=key)
        if best == idx[0] and best > 0:
            nxt = best - 1
        elif best == idx[-1] and best < len(ladder) - 1:
            nxt = best + 1
        else:
            break
        scores[ladder[nxt]] = float(score(ladder[nxt]))
        idx = sorted([*idx, nxt])
    return ladder[best], scores, idx[0] < best < idx[-1]
