"""Losses for the three heads, metrics, ``evaluate`` and a small training loop with early stopping."""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data.data import BaseData
from torch_geometric.loader import DataLoader


def check_survival(time: torch.Tensor, event: torch.Tensor) -> None:
    """Survival targets: finite positive times, events in {0, 1}."""
    if time.shape != event.shape or time.ndim != 1:
        raise ValueError(f"time and event must be 1-d of the same length, got {tuple(time.shape)}, {tuple(event.shape)}")
    if not torch.isfinite(time).all() or (time <= 0).any():
        raise ValueError("survival times must be finite and > 0")
    if not torch.isin(event, torch.tensor([0.0, 1.0], dtype=event.dtype, device=event.device)).all():
        raise ValueError("survival events must be 0 (censored) or 1 (event)")


def cox_loss(risk: torch.Tensor, time: torch.Tensor, event: torch.Tensor) -> torch.Tensor:
    r"""Negative Cox partial log-likelihood (Breslow ties), mean over events.

    ``−Σ_{i: δ_i=1} [η_i − log Σ_{j: t_j ≥ t_i} exp η_j] / Σ δ``.
    """
    risk, time, event = risk.reshape(-1), time.reshape(-1).to(risk.dtype), event.reshape(-1).to(risk.dtype)
    check_survival(time, event)
    if event.sum() < 1:
        raise ValueError("the Cox loss needs at least one event in the batch")
    at_risk = (time.unsqueeze(0) >= time.unsqueeze(1)).to(risk.dtype)  # [i, j]: j at risk at t_i
    log_den = torch.logsumexp(risk.unsqueeze(0) + torch.log(at_risk), dim=1)
    return -((risk - log_den) * event).sum() / event.sum()


def discrete_survival_nll(logits: torch.Tensor, bins: torch.Tensor, event: torch.Tensor) -> torch.Tensor:
    r"""Discrete-time survival NLL with hazards ``h_t = σ(logit_t)`` (B, T) and the interval index ``bins``.

    Event in bin t: ``−log h_t − Σ_{s<t} log(1−h_s)``; censored in bin t: ``−Σ_{s≤t} log(1−h_s)``.
    """
    if logits.ndim != 2:
        raise ValueError(f"logits must be (B, T), got {tuple(logits.shape)}")
    bins = bins.reshape(-1).long()
    event = event.reshape(-1).to(logits.dtype)
    if ((bins < 0) | (bins >= logits.shape[1])).any():
        raise ValueError(f"bins must lie in [0, {logits.shape[1]})")
    if not torch.isin(event, torch.tensor([0.0, 1.0], dtype=event.dtype)).all():
        raise ValueError("survival events must be 0 (censored) or 1 (event)")
    log_surv = F.logsigmoid(-logits)  # log(1 - h)
    cum = torch.cumsum(log_surv, dim=1)
    idx = bins.unsqueeze(1)
    before = torch.where(bins > 0, cum.gather(1, (idx - 1).clamp(min=0)).squeeze(1), torch.zeros_like(event))
    ev = -(F.logsigmoid(logits).gather(1, idx).squeeze(1) + before)
    ce = -cum.gather(1, idx).squeeze(1)
    return (event * ev + (1 - event) * ce).mean()


def loss_fn(task: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The head's loss: BCE (binary) / cross-entropy, Cox (``y`` = (B, 2) time, event), MSE."""
    if task == "classification":
        if out.shape[-1] == 1:
            return F.binary_cross_entropy_with_logits(out.reshape(-1), y.reshape(-1).to(out.dtype))
        return F.cross_entropy(out, y.reshape(-1).long())
    if task == "survival":
        y = y.reshape(-1, 2)
        return cox_loss(out[:, 0], y[:, 0], y[:, 1])
    if task == "regression":
        return F.mse_loss(out.reshape(y.shape[0], -1).squeeze(-1), y.to(out.dtype))
    raise ValueError(f"unknown task {task!r}")


def concordance_index(time, risk, event) -> float:
    """Harrell's C: among comparable pairs (the earlier time is an event), the share the risk orders right."""
    t, r, e = (np.asarray(v, dtype=float).reshape(-1) for v in (time, risk, event))
    earlier = (t[:, None] < t[None, :]) & (e[:, None] == 1)
    if not earlier.any():
        return float("nan")
    conc = (r[:, None] > r[None, :]) + 0.5 * (r[:, None] == r[None, :])
    return float(conc[earlier].sum() / earlier.sum())


def metric(task: str, out: np.ndarray, y: np.ndarray) -> float:
    """AUROC (binary classification) or accuracy, C-index, Pearson r."""
    if task == "classification":
        if out.shape[-1] == 1:
            from sklearn.metrics import roc_auc_score

            if len(np.unique(y)) < 2:  # AUROC is undefined on one class (a small validation split)
                return float("nan")
            return float(roc_auc_score(y.reshape(-1), out.reshape(-1)))
        return float((out.argmax(-1) == y.reshape(-1)).mean())
    if task == "survival":
        y = y.reshape(-1, 2)
        return concordance_index(y[:, 0], out[:, 0], y[:, 1])
    from scipy.stats import pearsonr

    o = out.reshape(len(y), -1)[:, 0]
    return float(pearsonr(o, y.reshape(-1))[0]) if np.std(o) > 0 else 0.0


def _as_loader(data, batch_size=32):
    if isinstance(data, DataLoader):
        return data
    if isinstance(data, BaseData):
        data = [data]
    return DataLoader(list(data), batch_size=batch_size, shuffle=False)


@torch.no_grad()
def predict(model, data, batch_size: int = 32, device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """Slide outputs and targets over a dataset, list of ``Data`` or a PyG ``DataLoader``."""
    model.eval()
    outs, ys = [], []
    for b in _as_loader(data, batch_size):
        b = b.to(device)
        out, _ = model(b.x, b.edge_index, b.batch)
        outs.append(out.cpu())
        ys.append(b.y.cpu())
    return torch.cat(outs).numpy(), torch.cat(ys).numpy()


def evaluate(model, data, *, task: str | None = None, batch_size: int = 32, device="cpu") -> dict:
    """``{"metric": name, "value": v}``: AUROC / accuracy, C-index or Pearson r of ``model`` on ``data``."""
    task = task or getattr(model, "task", "classification")
    out, y = predict(model, data, batch_size, device)
    name = {"classification": "auroc" if out.shape[-1] == 1 else "accuracy", "survival": "c_index",
            "regression": "pearson_r"}[task]
    return {"metric": name, "value": metric(task, out, y), "n": int(len(y))}


def fit(model, train, val, *, task: str, lr: float = 1e-3, epochs: int = 20, batch_size: int = 16,
        weight_decay: float = 1e-4, reg_weight: float = 1.0, patience: int = 5, device="cpu",
        seed: int = 0) -> dict:
    """Adam on the task loss (+ ``reg_weight``·aux["reg_loss"]); keeps the weights with the best validation
    metric (early stopping). Stops with a message naming the epoch and step on a NaN loss."""
    g = torch.Generator().manual_seed(seed)
    loader = DataLoader(list(train), batch_size=batch_size, shuffle=True, generator=g)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state, bad, history = -np.inf, copy.deepcopy(model.state_dict()), 0, []
    for epoch in range(epochs):
        model.train()
        for step, b in enumerate(loader):
            b = b.to(device)
            out, aux = model(b.x, b.edge_index, b.batch)
            if task == "survival" and float(b.y.reshape(-1, 2)[:, 1].sum()) < 1:
                continue
            loss = loss_fn(task, out, b.y) + reg_weight * aux.get("reg_loss", 0.0)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite loss at epoch {epoch}, step {step}")
            opt.zero_grad()
            loss.backward()
            opt.step()
        score = evaluate(model, val, task=task, device=device)["value"]
        score = -np.inf if not np.isfinite(score) else score
        history.append(score)
        if score > best:
            best, best_state, bad = score, copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    return {"val": float(best), "epochs": len(history), "history": history}
