"""The weighted empirical measure μ = Σ_i w_i δ_{x_i} that the sampler returns and the rewards read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


def as_tensor(a, name: str, *, dtype=None, device=None) -> torch.Tensor:
    """``a`` (numpy array, torch tensor or nested list of numbers) as a float tensor; refuses strings and NaN/inf."""
    if isinstance(a, str | bytes) or (isinstance(a, np.ndarray) and a.dtype.kind not in "biuf"):
        raise TypeError(f"{name} must be numeric (array or tensor), got {type(a).__name__}")
    try:
        t = a if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a, dtype=float))
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be numeric (array or tensor): {e}") from None
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    t = t.to(dtype=dtype or t.dtype, device=device)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return t


@dataclass
class WeightedParticles:
    """Particles ``x`` (N, d) with log-weights ``log_weights`` (N,) (unnormalised; normalised by log-sum-exp).

    The measure is μ = Σ_i w_i δ_{x_i} with w = softmax(log_weights). ``ess`` = 1 / Σ_i w_i² ∈ [1, N].
    """

    x: torch.Tensor
    log_weights: torch.Tensor

    def __post_init__(self):
        self.x = as_tensor(self.x, "x")
        if self.x.ndim != 2 or self.x.shape[0] < 1:
            raise ValueError(f"x must have shape (N, d) with N >= 1, got {tuple(self.x.shape)}")
        lw = self.log_weights
        lw = torch.zeros(self.x.shape[0], dtype=self.x.dtype, device=self.x.device) if lw is None else lw
        if not isinstance(lw, torch.Tensor):
            lw = as_tensor(lw, "log_weights")
        if lw.shape != (self.x.shape[0],):
            raise ValueError(f"log_weights must have shape ({self.x.shape[0]},), got {tuple(lw.shape)}")
        if bool(torch.isnan(lw).any()) or bool(torch.isposinf(lw).any()) or bool(torch.isneginf(lw).all()):
            raise ValueError("log_weights must be finite where not -inf, and not all -inf")
        self.log_weights = lw.to(dtype=self.x.dtype, device=self.x.device)

    @classmethod
    def uniform(cls, x) -> WeightedParticles:
        x = as_tensor(x, "x")
        return cls(x, torch.zeros(x.shape[0], dtype=x.dtype, device=x.device))

    @classmethod
    def from_weights(cls, x, weights) -> WeightedParticles:
        """From non-negative weights (any scale; zeros allowed, not all)."""
        w = as_tensor(weights, "weights")
        if bool((w < 0).any()) or float(w.sum()) <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        return cls(x, torch.log(w))

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])

    @property
    def weights(self) -> torch.Tensor:
        return torch.softmax(self.log_weights, dim=0)

    @property
    def ess(self) -> float:
        return float(1.0 / (self.weights**2).sum())

    def mean(self) -> torch.Tensor:
        return self.weights @ self.x

    def cov(self) -> torch.Tensor:
        """Weighted covariance Σ_i w_i (x_i − m)(x_i − m)ᵀ (the measure's own, no Bessel correction)."""
        c = self.x - self.mean()
        return (c * self.weights[:, None]).T @ c

    def numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x, normalised weights)`` as float64 numpy arrays."""
        return self.x.detach().cpu().double().numpy(), self.weights.detach().cpu().double().numpy()

    def save(self, path) -> Path:
        """One ``.npz`` file with ``x`` and ``log_weights``."""
        path = Path(path)
        np.savez(path, x=self.x.detach().cpu().numpy(), log_weights=self.log_weights.detach().cpu().numpy())
        return path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")

    @classmethod
    def load(cls, path) -> WeightedParticles:
        with np.load(Path(path), allow_pickle=False) as f:
            return cls(torch.as_tensor(f["x"]), torch.as_tensor(f["log_weights"]))


def as_particles(p, name: str = "particles") -> WeightedParticles:
    """A ``WeightedParticles`` as is; an (N, d) array or tensor as uniformly weighted particles."""
    if isinstance(p, WeightedParticles):
        return p
    try:
        return WeightedParticles.uniform(p)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{name}: {e}") from None
