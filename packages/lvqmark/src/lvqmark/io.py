"""Self-contained model files (``torch.save`` of plain dicts and tensors; ``weights_only=True`` loads)
and the minibatch iterator the training stages share."""

from __future__ import annotations

from pathlib import Path

import torch

from paperworks import atomic_torch_save


def save_doc(doc: dict, path) -> Path:
    """Write ``doc`` atomically (temporary file, then ``os.replace``)."""
    return atomic_torch_save(doc, path)


def load_doc(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    doc = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(doc, dict) or "class" not in doc:
        raise ValueError(f"{path} is not a model saved by lvqmark")
    return doc


def batches(data, batch: int, steps: int, generator: torch.Generator | None):
    """``steps`` random minibatches (with replacement across steps) of a tensor or a tuple of tensors."""
    tensors = data if isinstance(data, tuple) else (data,)
    n = tensors[0].shape[0]
    for _ in range(steps):
        idx = torch.randint(0, n, (min(batch, n),), generator=generator).to(tensors[0].device)
        picked = tuple(t[idx] for t in tensors)
        yield picked if isinstance(data, tuple) else picked[0]
