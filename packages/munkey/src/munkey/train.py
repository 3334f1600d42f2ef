"""Training: ``fit(model, images, labels, ids=None, epochs=...)`` for MUNKEY and the plain ViT."""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F

from munkey.munkey import MUNKEY, _ids_tensor

log = logging.getLogger("munkey")


def check_labels(labels, n: int, num_classes: int, name: str = "labels") -> torch.Tensor:
    if not isinstance(labels, torch.Tensor):
        labels = torch.as_tensor(labels)
    if labels.is_floating_point() or labels.dtype == torch.bool:
        raise TypeError(f"{name} must be integer class indices, got dtype {labels.dtype}")
    if labels.ndim != 1 or labels.numel() != n:
        raise ValueError(f"{name} must have shape ({n},), got {tuple(labels.shape)}")
    if n and (int(labels.min()) < 0 or int(labels.max()) >= num_classes):
        raise ValueError(f"{name} must lie in [0, {num_classes}), got range [{int(labels.min())}, {int(labels.max())}]")
    return labels.long()


def _param_groups(model, weight_decay: float, memory_lr: float | None, lr: float):
    groups = [{"params": model.backbone_parameters(), "weight_decay": weight_decay, "lr": lr}]
    if isinstance(model, MUNKEY) and model.mem_values.numel():
        groups.append({"params": [model.mem_values], "weight_decay": 0.0, "lr": memory_lr or lr})
    return groups


def fit(model, images: torch.Tensor, labels, ids=None, *, epochs: int = 30, lr: float = 2e-3,
        batch_size: int = 64, weight_decay: float = 0.05, memory_lr: float | None = 1e-2, seed: int = 0,
        verbose: bool = False):
    """Train ``model`` (a :class:`~munkey.MUNKEY` or :class:`~munkey.ViT`) by AdamW on cross-entropy.

    For MUNKEY, the images are first memorised under ``ids`` (default ``0..N-1``) unless all of them
    are already in memory; weight decay acts on the backbone only (not on the value slots), and the
    model's memory dropout is active (the memorisation routing, inferred from the abstract). A cosine
    learning-rate schedule runs over ``epochs``. A NaN loss stops training with the epoch named.

    Returns the model (in eval mode).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs must be an int >= 0, got {epochs!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    for name, v in (("lr", lr), ("weight_decay", weight_decay)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    images = model.check_images(images, "images")
    labels = check_labels(labels, images.shape[0], model.num_classes).to(images.device)
    if images.shape[0] == 0:
        raise ValueError("fit needs at least one image")
    if isinstance(model, MUNKEY):
        ids = torch.arange(images.shape[0]) if ids is None else _ids_tensor(ids)
        if ids.numel() != images.shape[0]:
            raise ValueError(f"ids has {ids.numel()} entries but images has {images.shape[0]}")
        held = torch.isin(ids, model.mem_ids.cpu())
        if not bool(held.all()):
            model.memorize(images[~held.to(images.device)], ids[~held])
    elif ids is not None:
        raise ValueError("ids are for a MUNKEY model; a plain ViT has no memory")
    opt = torch.optim.AdamW(_param_groups(model, weight_decay, memory_lr, lr))
    n = images.shape[0]
    steps = max(1, epochs * math.ceil(n / batch_size))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    g = torch.Generator().manual_seed(seed)
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=g).to(images.device)
        total = 0.0
        for i in range(0, n, batch_size):
            b = perm[i:i + batch_size]
            loss = F.cross_entropy(model(images[b]), labels[b])
            if not torch.isfinite(loss):
                raise FloatingPointError(f"fit: the loss became {loss.item()} at epoch {epoch}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(b)
        if verbose:
            log.info("epoch %d loss %.4f", epoch, total / n)
    return model.eval()


@torch.no_grad()
def predict_logits(model, images: torch.Tensor, batch_size: int = 512, **kw) -> torch.Tensor:
    model.eval()
    return torch.cat([model(images[i:i + batch_size], **kw) for i in range(0, len(images), batch_size)])
