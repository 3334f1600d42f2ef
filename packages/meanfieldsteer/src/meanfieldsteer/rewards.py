r"""Measure rewards R(μ) and their first variations Ψ(x, μ) = δR/δμ (x).

Every reward is evaluated on the **weighted** empirical measure μ = Σ_j w_j δ_{x_j}. The first variation is
fixed up to an additive constant; the one returned here satisfies, for every point y,

    d/dε R((1 − ε) μ + ε δ_y) |_{ε=0} = Ψ(y, μ) − ∫ Ψ(·, μ) dμ,

which the tests check by finite differences with unequal weights. The tilted target of the paper is
μ* = argmax_μ R(μ) − KL(μ ‖ p), i.e. μ* ∝ p · exp Ψ(·, μ*).

Convention for λ (stated because the paper's scaling is not confirmed; inferred): **λ multiplies half of a
squared discrepancy** (``MeanReward``: R = −(λ/2)‖m_μ − m*‖², ``MMDReward``: R = −(λ/2) MMD²(μ, ν)), so the
first variation carries λ itself (Ψ = −λ(m_μ − m*)·x, Ψ = −λ(k*μ − k*ν)); ``KDEEntropyReward`` is R = λ·H.

Each reward also has ``prepare(y, x)`` → a function ``w ↦ Ψ(y, Σ_j w_j δ_{x_j})`` that keeps the kernel
matrices between ``y`` and ``x``: the sampler's Picard iterations and linear solve reuse them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from meanfieldsteer.particles import WeightedParticles, as_particles, as_tensor
from paperworks import check_float


def _lam(lam) -> float:
    return check_float(lam, "lam", minimum=0.0)


def _bandwidth(h) -> float:
    return check_float(h, "bandwidth", minimum=0.0, open_minimum=True)


def rbf(y: torch.Tensor, x: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """RBF kernel matrix exp(−‖y_i − x_j‖² / (2h²)), shape (len(y), len(x))."""
    d2 = (y * y).sum(1)[:, None] + (x * x).sum(1)[None, :] - 2.0 * (y @ x.T)
    return torch.exp(-d2.clamp_min(0.0) / (2.0 * bandwidth**2))


def _points(y, dim: int) -> torch.Tensor:
    y = as_tensor(y, "x")
    if y.ndim != 2 or y.shape[1] != dim:
        raise ValueError(f"x must have shape (M, {dim}), got {tuple(y.shape)}")
    return y


def jvp_w(prep, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(∂Ψ/∂w) v by a central difference (exact for the rewards linear in μ; O(h²) for the KDE entropy)."""
    h = 1e-4 / max(float(v.abs().max()), 1e-30)
    return (prep(w + h * v) - prep(w - h * v)) / (2 * h)


class MeasureReward:
    """Base class: subclasses define ``value``, ``prepare`` and ``dim`` checks."""

    lam: float = 1.0

    def value(self, particles) -> torch.Tensor:
        """R(μ) of the weighted measure ``particles`` (a ``WeightedParticles`` or an (N, d) array)."""
        raise NotImplementedError

    def prepare(self, y: torch.Tensor, x: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        """``w ↦ Ψ(y, Σ_j w_j δ_{x_j})`` for normalised weights ``w`` (N,); differentiable in y and w."""
        raise NotImplementedError

    def first_variation(self, x, particles) -> torch.Tensor:
        """Ψ(x, μ) at the points ``x`` (M, d) for the weighted measure ``particles``; shape (M,)."""
        p = as_particles(particles)
        y = _points(x, p.dim).to(p.x)
        return self.prepare(y, p.x)(p.weights)

    def grad_first_variation(self, x, particles) -> torch.Tensor:
        """∇ₓΨ(x, μ) by autograd, μ held fixed; shape (M, d)."""
        p = as_particles(particles)
        y = _points(x, p.dim).to(p.x).detach().requires_grad_(True)
        with torch.enable_grad():
            psi = self.prepare(y, p.x.detach())(p.weights.detach())
            (g,) = torch.autograd.grad(psi.sum(), y)
        return g


class LinearReward(MeasureReward):
    """R(μ) = ∫ r dμ for a callable ``r`` from (N, d) to (N,): Ψ = r, independent of μ (pointwise FK steering)."""

    def __init__(self, r: Callable[[torch.Tensor], torch.Tensor]):
        if not callable(r):
            raise TypeError(f"r must be a callable from (N, d) to (N,), got {type(r).__name__}")
        self.r = r

    def _r(self, y):
        out = self.r(y)
        if not isinstance(out, torch.Tensor) or out.shape != (y.shape[0],):
            shape = tuple(out.shape) if hasattr(out, "shape") else type(out).__name__
            raise ValueError(f"r must map (N, d) to (N,): got {shape} for N={y.shape[0]}")
        return out

    def value(self, particles):
        p = as_particles(particles)
        return p.weights @ self._r(p.x)

    def prepare(self, y, x):
        ry = self._r(y)
        return lambda w: ry + 0.0 * w.sum()

    def first_variation(self, x, particles):
        p = as_particles(particles)
        return self._r(_points(x, p.dim).to(p.x))


class MeanReward(MeasureReward):
    """R(μ) = −(λ/2) ‖m_μ − m*‖², m_μ = Σ_j w_j x_j; Ψ(y, μ) = −λ (m_μ − m*) · y.

    With a Gaussian prior N(m₀, C) the target is Gaussian with the same covariance and mean
    (I + λC)⁻¹(m₀ + λ C m*) (``gaussian_mean_tilt``).
    """

    def __init__(self, target_mean, *, lam: float = 1.0):
        t = as_tensor(target_mean, "target_mean")
        if t.ndim != 1 or t.shape[0] < 1:
            raise ValueError(f"target_mean must have shape (d,), got {tuple(t.shape)}")
        self.target_mean, self.lam = t, _lam(lam)

    def _check(self, d):
        if d != self.target_mean.shape[0]:
            raise ValueError(f"particles have dimension {d} but target_mean has {self.target_mean.shape[0]}")

    def value(self, particles):
        p = as_particles(particles)
        self._check(p.dim)
        return -0.5 * self.lam * ((p.mean() - self.target_mean.to(p.x)) ** 2).sum()

    def prepare(self, y, x):
        self._check(x.shape[1])
        m = self.target_mean.to(x)
        return lambda w: -self.lam * (y @ (w @ x - m))


class MMDReward(MeasureReward):
    """R(μ) = −(λ/2) MMD²_k(μ, ν) with the RBF kernel k of ``bandwidth`` h and ν the sample set ``target``.

    ``target``: an (M, d) array/tensor (uniform weights) or ``WeightedParticles`` (e.g. a weighted grid).
    Ψ(y, μ) = −λ (Σ_j w_j k(y, x_j) − ∫ k(y, z) dν(z)).
    """

    def __init__(self, target, *, lam: float = 1.0, bandwidth: float = 1.0):
        self.target = as_particles(target, "target")
        self.lam, self.bandwidth = _lam(lam), _bandwidth(bandwidth)
        tx, tw = self.target.x, self.target.weights
        self._nu_nu = float(tw @ rbf(tx, tx, self.bandwidth) @ tw)
        self._kcache = None

    def _nu(self, y):
        t = self.target
        if y.shape[1] != t.dim:
            raise ValueError(f"particles have dimension {y.shape[1]} but the target has {t.dim}")
        return rbf(y, t.x.to(y), self.bandwidth) @ t.weights.to(y)

    def mmd2(self, particles) -> torch.Tensor:
        p = as_particles(particles)
        w = p.weights
        if self._kcache is not None and self._kcache[0] is p.x:  # same support (e.g. a grid): reuse the kernels
            kxx, bx = self._kcache[1], self._kcache[2]
        else:
            kxx, bx = rbf(p.x, p.x, self.bandwidth), self._nu(p.x)
            self._kcache = (p.x, kxx, bx) if not p.x.requires_grad else None
        return w @ kxx @ w - 2.0 * (w @ bx) + self._nu_nu

    def value(self, particles):
        return -0.5 * self.lam * self.mmd2(particles)

    def prepare(self, y, x):
        kyx, by = rbf(y, x, self.bandwidth), self._nu(y)
        return lambda w: -self.lam * (kyx @ w - by)


class KDEEntropyReward(MeasureReward):
    """R(μ) = λ H(μ), H(μ) = −∫ log ρ_μ dμ with the Gaussian KDE ρ_μ(z) = Σ_j w_j φ_h(z − x_j) (self-term kept).

    Ψ(y, μ) = −λ (log ρ_μ(y) + Σ_j w_j φ_h(x_j − y) / ρ_μ(x_j)): pushes particles apart (diversity).
    """

    def __init__(self, *, lam: float = 1.0, bandwidth: float = 0.5):
        self.lam, self.bandwidth = _lam(lam), _bandwidth(bandwidth)

    def _phi(self, y, x):
        d = y.shape[1]
        return rbf(y, x, self.bandwidth) / (2 * torch.pi * self.bandwidth**2) ** (d / 2)

    def value(self, particles):
        p = as_particles(particles)
        w = p.weights
        return -self.lam * (w @ torch.log(self._phi(p.x, p.x) @ w))

    def prepare(self, y, x):
        kyx, kxx = self._phi(y, x), self._phi(x.detach(), x.detach())

        def psi(w):
            rho_x = kxx @ w
            return -self.lam * (torch.log(kyx @ w) + kyx @ (w / rho_x))

        return psi


__all__ = ["jvp_w", "KDEEntropyReward", "LinearReward", "MMDReward", "MeanReward", "MeasureReward", "WeightedParticles", "rbf"]
