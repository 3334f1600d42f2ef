"""Discrete diffusion noise processes with closed-form marginals and reverse posteriors.

All processes here are D3PM-style Markov chains on a finite state space: a one-step kernel
``Q_t`` (rows: from, columns: to), the cumulative kernel ``Qbar_t = Q_1 ... Q_t`` and the
reverse posterior

    q(x_{t-1} = j | x_t, x_0 = k) = Q_t[j, x_t] Qbar_{t-1}[k, j] / Qbar_t[k, x_t].

The denoiser predicts ``p(x_0 | x_t)`` over the K data classes; the reverse step is
``sum_k q(x_{t-1} | x_t, x_0 = k) p(x_0 = k | x_t)``.

:class:`HierarchicalDiffusion` (MolHIT's HDDM) adds G *group* states and one *mask* state
to the K data states: S = K + G + 1. With the projection Φ: data class -> group,

    Q_t = α_t I + β_t Q⁽¹⁾(Φ) + γ_t Q⁽²⁾,   α_t + β_t + γ_t = 1,

where ``Q⁽¹⁾`` sends a data state k to its group Φ(k) (groups and mask stay), and ``Q⁽²⁾``
sends every state to the mask. The three matrices form a semigroup
(Q⁽¹⁾Q⁽¹⁾ = Q⁽¹⁾, Q⁽¹⁾Q⁽²⁾ = Q⁽²⁾Q⁽¹⁾ = Q⁽²⁾Q⁽²⁾ = Q⁽²⁾), so the marginal keeps the form

    Qbar_t = ᾱ_t I + β̄_t Q⁽¹⁾ + γ̄_t Q⁽²⁾,  ᾱ_t = ∏ α_s,  ᾱ_t + β̄_t = ∏ (α_s + β_s).

We choose the cumulative schedule directly: the not-yet-masked probability
``u(τ) = cos(πτ/2)`` and the still-a-data-state probability ``ᾱ = u(τ)·cos(πτ/2)``, τ = t/T
(so a token first moves to its group, later to the mask). The schedule is our choice; the
paper's is not in the abstract (inferred).

Reference: Jung et al., "MolHIT: Advancing Molecular-Graph Generation with Hierarchical
Discrete Diffusion Models", arXiv 2602.17602.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from paperworks import check_int


def _cos(T: int) -> np.ndarray:
    tau = np.arange(T + 1) / T
    c = np.cos(0.5 * math.pi * tau)
    c[-1] = 0.0
    return c


class DiscreteDiffusion:
    """Base class: a chain given by its one-step kernels ``Q[t]`` (t = 1..T) on S states.

    Subclasses fill ``self.Q`` (shape ``(T+1, S, S)``, ``Q[0] = I``); the base class forms
    ``Qbar``, forward sampling, posteriors and the prior.

    Args:
        num_classes: K, the number of data classes (states 0..K-1).
        T: number of diffusion steps (>= 1).
    """

    name = "base"

    def __init__(self, num_classes: int, T: int):
        if not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}")
        if not isinstance(T, int) or T < 1:
            raise ValueError(f"T must be an int >= 1, got {T!r}")
        self.K, self.T = num_classes, T

    def _finish(self, Q: np.ndarray) -> None:
        Qbar = np.empty_like(Q)
        Qbar[0] = np.eye(Q.shape[1])
        for t in range(1, self.T + 1):
            Qbar[t] = Qbar[t - 1] @ Q[t]
        self.Q = torch.tensor(Q, dtype=torch.float32)
        self.Qbar = torch.tensor(Qbar, dtype=torch.float32)
        self.Q64, self.Qbar64 = Q, Qbar

    @property
    def num_states(self) -> int:
        return self.Q.shape[1]

    def to(self, device) -> DiscreteDiffusion:
        self.Q, self.Qbar = self.Q.to(device), self.Qbar.to(device)
        return self

    # forward ---------------------------------------------------------------------------
    def q_probs(self, x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``q(x_t | x_0)``: shape ``x0.shape + (S,)``; ``t`` is (B,) with B = x0.shape[0]."""
        tt = t.view(-1, *([1] * (x0.dim() - 1))).expand_as(x0)
        return self.Qbar[tt, x0]

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw ``x_t ~ q(x_t | x_0)``."""
        return categorical(self.q_probs(x0, t), generator)

    # reverse ---------------------------------------------------------------------------
    def posterior(self, xt: torch.Tensor, p0: torch.Tensor, t: int) -> torch.Tensor:
        """``p(x_{t-1} | x_t) = sum_k q(x_{t-1} | x_t, x_0=k) p0[..., k]``, shape ``xt.shape + (S,)``.

        Args:
            xt: states at step t, integer tensor.
            p0: probabilities over the K data classes, shape ``xt.shape + (K,)``.
            t: the step, 1 <= t <= T.
        """
        if not 1 <= int(t) <= self.T:
            raise ValueError(f"t must be in 1..{self.T}, got {t}")
        if p0.shape[-1] != self.K:
            raise ValueError(f"p0 must have {self.K} classes in its last axis, got {p0.shape[-1]}")
        t = int(t)
        left = self.Q[t][:, xt].movedim(0, -1)           # Q_t[j, x_t]
        denom = self.Qbar[t][: self.K, xt].movedim(0, -1)  # Qbar_t[k, x_t]
        w = torch.where(denom > 0, p0 / denom.clamp_min(1e-30), torch.zeros_like(p0))
        post = left * (w @ self.Qbar[t - 1][: self.K])
        return post / post.sum(-1, keepdim=True).clamp_min(1e-30)

    def posterior_x0(self, xt: torch.Tensor, x0: torch.Tensor, t: int) -> torch.Tensor:
        """``q(x_{t-1} | x_t, x_0)`` for a known ``x_0``."""
        return self.posterior(xt, torch.nn.functional.one_hot(x0, self.K).float(), t)

    def prior_sample(self, shape, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw ``x_T`` from the stationary end of the chain (the same for every x_0)."""
        p = self.Qbar[self.T][0].expand(*shape, -1)
        return categorical(p, generator)


def categorical(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Sample the last axis of ``probs`` (rows need not be exactly normalised)."""
    c = probs.cumsum(-1)
    u = torch.rand(probs.shape[:-1] + (1,), generator=generator, device=probs.device) * c[..., -1:]
    return (c < u).sum(-1).clamp_max(probs.shape[-1] - 1)


class HierarchicalDiffusion(DiscreteDiffusion):
    """MolHIT's hierarchical discrete diffusion (HDDM): data states -> groups Φ -> mask.

    States: 0..K-1 data classes, K..K+G-1 groups, K+G the mask.

    Args:
        phi: group index of each data class, length K, values in 0..G-1.
        T: number of steps.

    Example:
        >>> hd = HierarchicalDiffusion([0, 0, 1], T=10)
        >>> a, b, g = hd.coefficients(5)
        >>> round(a + b + g, 6)
        1.0
    """

    name = "hierarchical"

    def __init__(self, phi, T: int = 100):
        raw = np.asarray(phi)
        if raw.dtype == bool or not np.issubdtype(raw.dtype, np.number) or (
                raw.size and not np.all(np.isfinite(raw.astype(float)) & (raw.astype(float) % 1 == 0))):
            raise ValueError(f"phi must hold integer group indices, got {raw.tolist()}")
        phi = raw.astype(np.int64)
        if phi.ndim != 1 or phi.size < 2 or phi.min() < 0:
            raise ValueError(f"phi must be a 1-D list of >= 2 non-negative group indices, got {phi.tolist()}")
        super().__init__(int(phi.size), T)
        self.phi = phi
        self.G = int(phi.max()) + 1
        self.mask_state = self.K + self.G
        S = self.K + self.G + 1
        u = _cos(T)                # P(not masked)
        s = u * _cos(T)            # P(still a data state)
        self.abar, self.unmasked = s, u
        eye = np.eye(S)
        Q1 = np.eye(S)
        Q1[np.arange(self.K)] = 0.0
        Q1[np.arange(self.K), self.K + phi] = 1.0
        Q2 = np.zeros((S, S))
        Q2[:, self.mask_state] = 1.0
        self.Q1, self.Q2 = Q1, Q2
        Q = np.zeros((T + 1, S, S))
        Q[0] = eye
        for t in range(1, T + 1):
            a = s[t] / s[t - 1] if s[t - 1] > 0 else 0.0
            ab = u[t] / u[t - 1] if u[t - 1] > 0 else 0.0
            Q[t] = a * eye + (ab - a) * Q1 + (1.0 - ab) * Q2
        self._finish(Q)

    def coefficients(self, t: int) -> tuple[float, float, float]:
        """Closed-form ``(ᾱ_t, β̄_t, γ̄_t)`` of ``Qbar_t = ᾱ I + β̄ Q⁽¹⁾ + γ̄ Q⁽²⁾``."""
        a, u = float(self.abar[t]), float(self.unmasked[t])
        return a, u - a, 1.0 - u

    def marginal(self, x0: int, t: int) -> np.ndarray:
        """Closed-form ``q(x_t | x_0)`` as a length-S vector: ᾱ at x0, β̄ at Φ(x0), γ̄ at mask."""
        x0 = check_int(x0, "x0", minimum=0, maximum=self.K - 1)
        t = check_int(t, "t", minimum=0, maximum=self.T)
        a, b, g = self.coefficients(t)
        p = np.zeros(self.num_states)
        p[x0] += a
        p[self.K + self.phi[x0]] += b
        p[self.mask_state] += g
        return p
