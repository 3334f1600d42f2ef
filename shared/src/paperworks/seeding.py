"""Seeding: one call seeds Python, NumPy and (when installed) torch.

torch is seeded at once when it is already imported, and otherwise the moment it is first imported
(a one-shot import hook), so a NumPy-only run does not pay torch's import (about 3 s) and a run that
imports torch lazily after seeding still gets a seeded torch.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import random
import sys

import numpy as np

# (seed, deterministic) of the latest seed_everything call made while torch was not yet imported
_pending: tuple[int, bool] | None = None


def _seed_torch(torch, seed: int, deterministic: bool) -> None:
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


class _SeedTorchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps torch's own loader so torch is seeded right after it executes."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        _remove_hook()
        spec = importlib.util.find_spec("torch")  # the real finders, this hook removed
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _SeedingLoader(spec.loader)
        return spec


class _SeedingLoader(importlib.abc.Loader):
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):  # get_resource_reader, get_source, ... as the real loader has them
        return getattr(self._inner, name)

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        # torch sees its own loader while it executes and afterwards
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        global _pending
        if _pending is not None:
            seed, deterministic = _pending
            _pending = None
            _seed_torch(module, seed, deterministic)


def _remove_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _SeedTorchOnImport)]


def seed_everything(seed: int, *, deterministic: bool = False) -> np.random.Generator:
    """Seed ``random``, NumPy's legacy global state and torch (if installed).

    Args:
        seed: a non-negative integer.
        deterministic: also ask torch for deterministic algorithms.

    Returns:
        A fresh ``numpy.random.Generator`` seeded with ``seed``: pass it around
        instead of relying on global state.

    JAX has no global state; build keys with ``jax.random.key(seed)`` yourself.
    Seeding torch does not initialise CUDA (torch seeds CUDA lazily). When torch is installed but
    not yet imported, it is not imported here: it is seeded with the latest seed the moment it is.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0 or seed >= 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    global _pending
    if "torch" in sys.modules:
        _pending = None
        _remove_hook()
        _seed_torch(sys.modules["torch"], seed, deterministic)
    elif importlib.util.find_spec("torch") is not None:
        _pending = (seed, bool(deterministic))
        if not any(isinstance(f, _SeedTorchOnImport) for f in sys.meta_path):
            sys.meta_path.insert(0, _SeedTorchOnImport())
    return np.random.default_rng(seed)


def seeds_of(cfg) -> list[int]:
    """The seeds of a run: ``cfg.seeds`` (a list, or an int N) or else ``[cfg.seed]``.

    With ``seeds: N``, ``seed`` indexes a block of N seeds: ``seed·N … seed·N + N − 1``, so a
    sweep ``-m seed=0,1,2`` runs disjoint seed sets that ``python -m paperworks aggregate`` can pool.
    """
    seeds = cfg.get("seeds", None)
    if seeds is None:
        return [int(cfg.get("seed", 0))]
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {seeds}")
        block = int(cfg.get("seed", 0))
        if block < 0:
            raise ValueError(f"seed must be >= 0, got {block}")
        return list(range(block * seeds, block * seeds + seeds))
    out = [int(s) for s in seeds]
    if not out:
        raise ValueError("seeds must not be an empty list")
    return out
