"""Seeding: one call seeds Python, NumPy and (when installed) torch."""

from __future__ import annotations

import importlib.util
import os
import random

import numpy as np


def seed_everything(seed: int, *, deterministic: bool = False) -> np.random.Generator:
    """Seed ``random``, NumPy's legacy global state and torch (if installed).

    Args:
        seed: a non-negative integer.
        deterministic: also ask torch for deterministic algorithms.

    Returns:
        A fresh ``numpy.random.Generator`` seeded with ``seed``: pass it around
        instead of relying on global state.

    JAX has no global state; build keys with ``jax.random.key(seed)`` yourself.
    Seeding torch does not initialise CUDA (torch seeds CUDA lazily).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0 or seed >= 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)
        if deterministic:
            torch.use_deterministic_algorithms(True, warn_only=True)
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
