"""The Triton dispatcher: a Triton kernel where the inputs can take it, the torch reference otherwise.

The choice follows the *tensors*, not the machine. At each call, in order:

1. ``PAPERWORKS_FORCE_REFERENCE=1`` → the reference.
2. Triton not importable → the reference.
3. ``TRITON_INTERPRET=1`` (Triton's CPU interpreter, for tests) → the Triton kernel.
4. Every tensor argument is on a CUDA device (and, when the kernel declares ``dtypes``, of one
   of them) → the Triton kernel; CPU tensors, mixed devices or other dtypes → the reference.

Nothing here imports triton or torch at import time.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable, Iterable


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _tensors(args, kwargs) -> list:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return []
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(x for x in a if isinstance(x, torch.Tensor))
    return found


def triton_enabled() -> bool:
    """Whether Triton could be used at all here (not forced off, importable)."""
    if _truthy("PAPERWORKS_FORCE_REFERENCE"):
        return False
    return importlib.util.find_spec("triton") is not None


def choose_backend(args=(), kwargs=None, dtypes: Iterable | None = None) -> str:
    """``"triton"`` or ``"reference"`` for a call with these arguments (the rules above)."""
    kwargs = kwargs or {}
    if not triton_enabled():
        return "reference"
    tensors = _tensors(args, kwargs)
    if dtypes is not None and any(t.dtype not in dtypes for t in tensors):
        return "reference"
    if _truthy("TRITON_INTERPRET"):
        return "triton"
    if not tensors or not all(t.is_cuda for t in tensors):
        return "reference"
    return "triton"


def dispatch(reference: Callable, *, dtypes: Iterable | None = None) -> Callable:
    """Decorator pairing a Triton launcher with its plain-torch ``reference``.

    Example::

        def softmax_ref(x): return torch.softmax(x, -1)

        @dispatch(reference=softmax_ref, dtypes=(torch.float16, torch.float32))
        def softmax(x): ...  # launches the Triton kernel

    The decision is made at each call from the arguments (cheap), so CPU tensors on a GPU
    machine take the reference. ``softmax.backend(*args)`` tells which path those arguments take.
    """
    allowed = None if dtypes is None else tuple(dtypes)

    def wrap(triton_fn: Callable) -> Callable:
        @functools.wraps(triton_fn)
        def call(*args, **kwargs):
            fn = triton_fn if choose_backend(args, kwargs, allowed) == "triton" else reference
            return fn(*args, **kwargs)

        call.reference = reference
        call.triton = triton_fn
        call.backend = lambda *a, **k: choose_backend(a, k, allowed)
        return call

    return wrap
