r"""The "pretrained model": VP (Ornstein–Uhlenbeck) noise schedules and the exact Gaussian-mixture score.

Forward SDE dX = −½ β(t) X dt + √β(t) dW on t ∈ [0, 1]; X_t | X_0 ~ N(α_t X_0, σ_t² I) with
α_t = exp(−½ ∫₀ᵗ β), σ_t² = 1 − α_t². For p = Σ_k π_k N(m_k, C_k) the marginal is
p_t = Σ_k π_k N(α_t m_k, α_t² C_k + σ_t² I), whose score is exact: every error of a steered sample is then
the steering's (and the Euler–Maruyama discretisation's, shared by all methods).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from meanfieldsteer.particles import as_tensor

SCHEDULES = ("linear", "cosine", "constant")


class VPSchedule:
    """β(t) and α_t for ``name`` ∈ {"linear" (β 0.1 → 20), "cosine" (Nichol–Dhariwal, s = 0.008, t scaled by
    0.98 so that β stays finite; α₁ ≈ 0.03), "constant" (β = 10)}."""

    def __init__(self, name: str = "linear"):
        if name not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {name!r}")
        self.name = name

    def integral(self, t: float) -> float:
        """B(t) = ∫₀ᵗ β."""
        if self.name == "linear":
            return 0.1 * t + 0.5 * (20.0 - 0.1) * t * t
        if self.name == "constant":
            return 10.0 * t
        s, c = 0.008, 0.98
        return -2.0 * math.log(math.cos(math.pi / 2 * (c * t + s) / (1 + s)) / math.cos(math.pi / 2 * s / (1 + s)))

    def beta(self, t: float) -> float:
        if self.name == "linear":
            return 0.1 + (20.0 - 0.1) * t
        if self.name == "constant":
            return 10.0
        s, c = 0.008, 0.98
        return c * math.pi / (1 + s) * math.tan(math.pi / 2 * (c * t + s) / (1 + s))

    def alpha(self, t: float) -> float:
        return math.exp(-0.5 * self.integral(t))


class GaussianMixture:
    """p = Σ_k π_k N(m_k, C_k) with the exact VP-diffused score.

    Args:
        weights: (K,) non-negative mixture weights (normalised here).
        means: (K, d).
        covs: (K, d, d) SPD matrices, (K, d) diagonals or (K,) isotropic variances.
        schedule: a ``VPSchedule`` or its name.
    Numpy arrays or torch tensors, float32 or float64; computations run in the dtype of ``means``
    (float64 for numpy input) and follow the device of the ``x`` passed to ``score``.
    """

    def __init__(self, weights, means, covs, *, schedule="linear"):
        w, m, c = as_tensor(weights, "weights"), as_tensor(means, "means"), as_tensor(covs, "covs")
        if m.ndim != 2:
            raise ValueError(f"means must have shape (K, d), got {tuple(m.shape)}")
        k, d = m.shape
        if w.shape != (k,) or bool((w < 0).any()) or float(w.sum()) <= 0:
            raise ValueError(f"weights must be ({k},) non-negative with a positive sum, got shape {tuple(w.shape)}")
        if c.shape == (k,):
            c = c[:, None, None] * torch.eye(d, dtype=c.dtype)
        elif c.shape == (k, d):
            c = torch.diag_embed(c)
        if c.shape != (k, d, d):
            raise ValueError(f"covs must have shape ({k}, {d}, {d}), ({k}, {d}) or ({k},), got {tuple(c.shape)}")
        if not bool(torch.allclose(c, c.transpose(1, 2))) or bool((torch.linalg.eigvalsh(c) <= 0).any()):
            raise ValueError("covs must be symmetric positive definite")
        dt = m.dtype
        self.weights, self.means, self.covs = (w / w.sum()).to(dt), m, c.to(dt)
        self.schedule = schedule if isinstance(schedule, VPSchedule) else VPSchedule(schedule)

    @property
    def dim(self) -> int:
        return int(self.means.shape[1])

    def _params(self, t: float, x: torch.Tensor):
        a = self.schedule.alpha(float(t))
        eye = torch.eye(self.dim, dtype=x.dtype, device=x.device)
        cov = a * a * self.covs.to(x) + (1.0 - a * a) * eye
        return a * self.means.to(x), cov

    def log_prob(self, x: torch.Tensor, t: float = 0.0) -> torch.Tensor:
        """log p_t(x), shape (N,)."""
        mu, cov = self._params(t, x)
        dist = torch.distributions.MultivariateNormal(mu, covariance_matrix=cov)
        return torch.logsumexp(dist.log_prob(x[:, None, :]) + torch.log(self.weights.to(x)), dim=1)

    def score(self, x: torch.Tensor, t: float) -> torch.Tensor:
        """∇ₓ log p_t(x) in closed form (responsibility-weighted −C_k⁻¹(x − α m_k)), shape (N, d)."""
        mu, cov = self._params(t, x)
        chol = torch.linalg.cholesky(cov)
        diff = x[:, None, :] - mu[None]  # (N, K, d)
        z = torch.linalg.solve_triangular(chol[None], diff[..., None], upper=False)[..., 0]  # L⁻¹ diff
        logdet = 2.0 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
        logr = torch.log(self.weights.to(x)) - 0.5 * (z * z).sum(-1) - 0.5 * logdet
        r = torch.softmax(logr, dim=1)
        prec_diff = torch.cholesky_solve(diff[..., None], chol[None])[..., 0]  # C⁻¹ diff
        return -(r[..., None] * prec_diff).sum(1)

    def save(self, path) -> Path:
        """One self-contained ``.npz`` file (weights, means, covs, schedule name)."""
        path = Path(path)
        np.savez(path, weights=self.weights.cpu().numpy(), means=self.means.cpu().numpy(),
                 covs=self.covs.cpu().numpy(), schedule=np.array(self.schedule.name))
        return path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")

    @classmethod
    def load(cls, path) -> GaussianMixture:
        """Reload a mixture written by ``save`` (no pickle)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no saved GaussianMixture at {path}")
        with np.load(path, allow_pickle=False) as f:
            missing = {"weights", "means", "covs", "schedule"} - set(f.files)
            if missing:
                raise ValueError(f"{path} is not a saved GaussianMixture (missing {sorted(missing)})")
            return cls(f["weights"], f["means"], f["covs"], schedule=str(f["schedule"]))

    def sample(self, n: int, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """n exact samples of p (t = 0)."""
        comp = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        chol = torch.linalg.cholesky(self.covs)
        eps = torch.randn(n, self.dim, dtype=self.means.dtype, generator=generator)
        return self.means[comp] + (chol[comp] @ eps[..., None])[..., 0]


__all__ = ["SCHEDULES", "GaussianMixture", "VPSchedule"]
