"""The diagonal empirical Fisher: closed form per linear layer, ``torch.func`` elsewhere.

F = (1/n) Σ_i g_i ⊙ g_i with g_i = ∇_θ CE(f(x_i; θ), y_i) (true labels: the *empirical* Fisher).
For ``nn.Linear`` with 2-D input, g_i(W) = δ_i x_iᵀ (δ_i the gradient of sample i's loss w.r.t. the
layer's output), so Σ_i g_i(W)² = (δ²)ᵀ(x²): one matmul per batch instead of n backward passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
import torch.nn.functional as F
from torch import nn


def _batches(loader, name: str = "loader"):
    if isinstance(loader, (torch.Tensor, Mapping, str)) or not isinstance(loader, Iterable):
        raise TypeError(f"{name} must be an iterable of (x, y) batches (e.g. a torch DataLoader), "
                        f"got {type(loader).__name__}")
    for b in loader:
        if not isinstance(b, (tuple, list)) or len(b) != 2:
            raise ValueError(f"{name} must yield (x, y) pairs")
        yield b[0], b[1]


def to_model(model: nn.Module, x, y):
    """Move a batch to the model's device; floating inputs take the model's floating dtype."""
    p = next(iter(model.parameters()), None)
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    if p is None:
        return x, y
    x = x.to(p.device, p.dtype) if x.is_floating_point() and p.is_floating_point() else x.to(p.device)
    return x, y.to(p.device)


def check_labels(logits: torch.Tensor, y: torch.Tensor, name: str = "labels") -> torch.Tensor:
    """y as int64, or a clear error when it is not integer or lies outside the head's classes."""
    if y.dtype.is_floating_point or y.dtype == torch.bool or y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D integer tensor, got dtype {y.dtype}, shape {tuple(y.shape)}")
    C = logits.shape[-1]
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= C):
        raise ValueError(f"{name} outside the head's {C} classes: range [{int(y.min())}, {int(y.max())}]")
    return y.long()


def _param_names(model: nn.Module, params) -> list[str]:
    names = dict(model.named_parameters())
    if params is None:
        return list(names)
    if isinstance(params, str):
        params = [params]
    params = list(params)
    missing = [p for p in params if p not in names]
    if missing:
        raise ValueError(f"params {missing} are not parameters of the model (it has {sorted(names)})")
    return params


def empirical_fisher(model: nn.Module, loader, params=None) -> dict[str, torch.Tensor]:
    """Diagonal empirical Fisher of the cross-entropy with the true labels, averaged over samples.

    Args:
        model: any ``nn.Module`` mapping a batch x to logits (n, C). Parameters of ``nn.Linear``
            layers fed 2-D inputs use the closed form (δ²)ᵀ(x²); any other parameter per-sample
            gradients from ``torch.func.vmap(grad(...))``.
        loader: iterable of ``(x, y)`` batches (a ``DataLoader``), y integer labels in [0, C).
        params: parameter names (default: all of them).

    Returns:
        ``{name: F}`` with F the parameter's shape, F ≥ 0.

    Example:
        >>> F = empirical_fisher(mlp, [(X, y)], params=["0.weight"])
    """
    names = _param_names(model, params)
    pmap = dict(model.named_parameters())
    owner = {}
    for mname, mod in model.named_modules():
        if isinstance(mod, nn.Linear):
            for pn in ("weight", "bias"):
                full = f"{mname}.{pn}" if mname else pn
                if full in names and getattr(mod, pn) is not None:
                    owner[full] = (mname, mod, pn)
    closed_mods = {m: mod for m, mod, _ in owner.values()}
    rest = [n for n in names if n not in owner]
    acc = {n: torch.zeros_like(pmap[n], dtype=torch.float32 if not pmap[n].is_floating_point() else pmap[n].dtype)
           for n in names}
    n_total = 0
    was_training = model.training
    model.eval()
    try:
        for x, y in _batches(loader):
            x, y = to_model(model, x, y)
            store: dict[str, list] = {}
            hooks = [mod.register_forward_hook(_saver(m, store)) for m, mod in closed_mods.items()]
            try:
                with torch.enable_grad():
                    xg = x.detach().clone().requires_grad_(x.is_floating_point())
                    logits = model(xg)
                    y = check_labels(logits, torch.as_tensor(y, device=logits.device), "labels")
                    loss = F.cross_entropy(logits, y, reduction="sum")
                    fallback = [m for m, (inp, _) in store.items() if inp.ndim != 2]
                    outs = [store[m][1] for m in store if m not in fallback]
                    grads = torch.autograd.grad(loss, outs) if outs else []
            finally:
                for h in hooks:
                    h.remove()
            gmap = dict(zip([m for m in store if m not in fallback], grads))
            for full, (m, _, pn) in owner.items():
                if m in gmap:
                    inp, d = store[m][0].detach(), gmap[m].detach()
                    acc[full] += (d.square().T @ inp.square()) if pn == "weight" else d.square().sum(0)
            per_sample = rest + [full for full, (m, _, _) in owner.items() if m not in gmap]
            if per_sample:
                for k, g2 in _func_sq_grads(model, x, y, per_sample).items():
                    acc[k] += g2
            n_total += len(y)
    finally:
        model.train(was_training)
    if n_total == 0:
        raise ValueError("loader yielded no samples")
    return {k: v / n_total for k, v in acc.items()}


def _saver(name, store):
    def hook(mod, inp, out):
        store[name] = (inp[0], out)
    return hook


def _func_sq_grads(model, x, y, names) -> dict[str, torch.Tensor]:
    """Σ_i g_i² of the named parameters by ``vmap(grad)``: per-sample gradients in one batched pass."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())
    train = {k: params[k] for k in names}
    fixed = {k: v for k, v in params.items() if k not in train}

    def loss1(p, xi, yi):
        out = torch.func.functional_call(model, {**fixed, **p, **buffers}, (xi[None],))
        return F.cross_entropy(out, yi[None])

    g = torch.func.vmap(torch.func.grad(loss1), in_dims=(None, 0, 0))(train, x, y)
    return {k: v.square().sum(0) for k, v in g.items()}


def per_sample_fisher(model: nn.Module, loader, params=None) -> dict[str, torch.Tensor]:
    """Reference: the same Fisher from one backward pass per sample (slow; for tests and the bench)."""
    names = _param_names(model, params)
    pmap = dict(model.named_parameters())
    acc = {n: torch.zeros_like(pmap[n]) for n in names}
    flags = {k: pmap[k].requires_grad for k in names}
    for k in names:
        pmap[k].requires_grad_(True)
    try:
        return _loop(model, loader, names, pmap, acc)
    finally:
        for k, f in flags.items():
            pmap[k].requires_grad_(f)


def _loop(model, loader, names, pmap, acc):
    n = 0
    with torch.enable_grad():
        for x, y in _batches(loader):
            x, y = to_model(model, x, y)
            for i in range(len(y)):
                out = model(x[i:i + 1])
                loss = F.cross_entropy(out, y[i:i + 1].long())
                gs = torch.autograd.grad(loss, [pmap[k] for k in names], allow_unused=True)
                for k, g in zip(names, gs):
                    if g is not None:
                        acc[k] += g.square()
                n += 1
    return {k: v / n for k, v in acc.items()}
