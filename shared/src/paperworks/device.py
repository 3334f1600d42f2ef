"""Device resolution: ``auto`` picks CUDA when torch sees one, else CPU."""

from __future__ import annotations

import importlib.util

_CHOICES = ("auto", "cpu", "cuda")


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(spec: str = "auto") -> str:
    """Turn ``"auto" | "cpu" | "cuda" | "cuda:N"`` into a concrete device string.

    ``auto`` returns ``"cuda"`` when torch is installed and sees a GPU, ``"cpu"`` otherwise.
    Asking for ``cuda`` where none is available raises ``ValueError`` rather than
    silently running on the CPU.
    """
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string, got {type(spec).__name__}")
    s = spec.strip().lower()
    base = s.split(":", 1)[0]
    if base not in _CHOICES or (":" in s and base != "cuda"):
        raise ValueError(f"device must be one of auto|cpu|cuda[:N], got {spec!r}")
    if base == "auto":
        return "cuda" if _cuda_available() else "cpu"
    if base == "cuda" and not _cuda_available():
        raise ValueError("device='cuda' was asked for but no CUDA device is available; use device=cpu or auto")
    return s
