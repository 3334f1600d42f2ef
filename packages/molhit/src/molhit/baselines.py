"""The noise processes MolHIT compares against, on the same state/posterior machinery.

- :class:`MarginalDiffusion` (DiGress, Vignac et al. 2023): ``Q_t = α_t I + (1-α_t) 1 mᵀ``
  with m the data marginal; ``Qbar_t = ᾱ_t I + (1-ᾱ_t) 1 mᵀ``. With uniform m it is the
  uniform process of D3PM.
- :class:`AbsorbingDiffusion` (D3PM absorbing/mask): ``Q_t = α_t I + (1-α_t) 1 e_maskᵀ``.

Both use the same cosine ``ᾱ_t = cos(πt/2T)`` as the hierarchical process's unmasked
probability, so the three differ only in where the mass goes.

The DiGress-style atom encoding lives in :func:`molhit.encoding.digress_encoding`.
"""

from __future__ import annotations

import numpy as np

from molhit.diffusion import DiscreteDiffusion, _cos


class MarginalDiffusion(DiscreteDiffusion):
    """DiGress's marginal-transition noise. ``marginal=None`` gives the uniform process.

    Args:
        num_classes: K.
        T: steps.
        marginal: the data class frequencies (length K, positive sum).
    """

    name = "marginal"

    def __init__(self, num_classes: int, T: int = 100, marginal=None):
        super().__init__(num_classes, T)
        m = np.full(num_classes, 1.0 / num_classes) if marginal is None else np.asarray(marginal, dtype=float)
        if m.shape != (num_classes,) or np.any(m < 0) or m.sum() <= 0:
            raise ValueError(f"marginal must be {num_classes} non-negative numbers with a positive sum")
        m = m / m.sum()
        self.m = m
        abar = _cos(T)
        self.abar = abar
        K = num_classes
        Q = np.zeros((T + 1, K, K))
        Q[0] = np.eye(K)
        for t in range(1, T + 1):
            a = abar[t] / abar[t - 1] if abar[t - 1] > 0 else 0.0
            Q[t] = a * np.eye(K) + (1 - a) * np.outer(np.ones(K), m)
        self._finish(Q)

    def marginal_probs(self, x0: int, t: int) -> np.ndarray:
        """Closed-form ``q(x_t | x_0) = ᾱ_t e_{x0} + (1 - ᾱ_t) m``."""
        p = (1 - self.abar[t]) * self.m
        p[x0] += self.abar[t]
        return p


class AbsorbingDiffusion(DiscreteDiffusion):
    """Absorbing-state (mask) noise: K data states plus the mask state K."""

    name = "absorbing"

    def __init__(self, num_classes: int, T: int = 100):
        super().__init__(num_classes, T)
        K = num_classes
        self.mask_state = K
        abar = _cos(T)
        self.abar = abar
        S = K + 1
        Q = np.zeros((T + 1, S, S))
        Q[0] = np.eye(S)
        for t in range(1, T + 1):
            a = abar[t] / abar[t - 1] if abar[t - 1] > 0 else 0.0
            Q[t] = a * np.eye(S)
            Q[t][:, K] += 1 - a
        self._finish(Q)

    def marginal_probs(self, x0: int, t: int) -> np.ndarray:
        p = np.zeros(self.K + 1)
        p[x0] = self.abar[t]
        p[self.K] += 1 - self.abar[t]
        return p
