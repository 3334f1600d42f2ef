"""Data generators."""

import numpy as np


def gaussian_samples(rng: np.random.Generator, *, trials: int, n: int, loc: float = 0.0) -> np.ndarray:
    """``trials`` independent samples of size ``n`` from N(loc, 1), shape ``(trials, n)``."""
    if trials < 1 or n < 1:
        raise ValueError(f"trials and n must be >= 1, got trials={trials}, n={n}")
    return rng.normal(loc=loc, size=(trials, n))
