"""The Triton dispatcher: a Triton kernel where it can run, the torch reference otherwise.

Rules, in order:
1. ``PAPERWORKS_FORCE_REFERENCE=1`` → always the reference.
2. Triton importable and (CUDA available or ``TRITON_INTERPRET=1``) → the Triton kernel.
3. Otherwise → the reference.

Nothing here imports triton or torch at import time.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable

from paperworks.device import _cuda_available


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def triton_enabled() -> bool:
    """Whether :func:`dispatch` would pick the Triton kernel now."""
    if _truthy("PAPERWORKS_FORCE_REFERENCE"):
        return False
    if importlib.util.find_spec("triton") is None:
        return False
    return _truthy("TRITON_INTERPRET") or _cuda_available()


def dispatch(reference: Callable) -> Callable:
    """Decorator pairing a Triton launcher with its plain-torch ``reference``.

    Example::

        def softmax_ref(x): return torch.softmax(x, -1)

        @dispatch(reference=softmax_ref)
        def softmax(x): ...  # launches the Triton kernel

    The decision is made at each call (cheap), so tests can flip the environment.
    The chosen path is exposed as ``softmax.backend()`` → ``"triton" | "reference"``.
    """

    def wrap(triton_fn: Callable) -> Callable:
        @functools.wraps(triton_fn)
        def call(*args, **kwargs):
            fn = triton_fn if triton_enabled() else reference
            return fn(*args, **kwargs)

        call.reference = reference
        call.triton = triton_fn
        call.backend = lambda: "triton" if triton_enabled() else "reference"
        return call

    return wrap
