"""Device resolution: ``auto`` picks CUDA when torch sees one, else CPU."""

from __future__ import annotations

import importlib.util
import os
import sys

_CHOICES = ("auto", "cpu", "cuda")
# Without one of these no torch build can see a GPU (NVIDIA's driver, or ROCm's kernel driver), so
# "auto" answers "cpu" without importing torch (about 3 s in a NumPy-only run).
_GPU_DRIVER_PATHS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")


def _gpu_driver_present() -> bool:
    return any(os.path.exists(p) for p in _GPU_DRIVER_PATHS)


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    if "torch" not in sys.modules and not _gpu_driver_present():
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
