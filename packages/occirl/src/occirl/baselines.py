"""Baselines: MCE-IRL dual gradient descent (plain step or Adam), and ``imitation``'s MCE code when present.

MCE-IRL (Ziebart 2010) minimises the dual ``g(θ) = p0·V_Φθ - <d_E, Φθ>`` by
``θ ← θ - lr Φᵀ(d_π - d_E)`` (``optimizer="sgd"``) or by Adam on the same gradient.
"""

from __future__ import annotations

import numpy as np

from occirl.method import _TabularIRL
from paperworks.utils import check_float

__all__ = ["MCEIRL", "imitation_partition_fh", "imitation_occupancy"]


class MCEIRL(_TabularIRL):
    """Maximum-causal-entropy IRL by gradient descent on the dual.

    Args:
        env, features, max_iter, tol: as :class:`occirl.OccupancyNaturalGradientIRL`.
        optimizer: ``"sgd"`` (a fixed step ``lr``) or ``"adam"`` (``lr``, β = (0.9, 0.999)).
        lr: the step size (> 0).
    """

    _kind = "mce_irl"

    def __init__(self, env, *, features=None, optimizer="sgd", lr=0.1, max_iter=500, tol=1e-4):
        super().__init__(env, features=features, max_iter=max_iter, tol=tol)
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
        self.optimizer = optimizer
        self.lr = check_float(lr, "lr", minimum=0.0, open_minimum=True)

    def _params(self):
        return {"optimizer": self.optimizer, "lr": self.lr}

    def _init(self, d_E):
        k = self._Phi.shape[-1]
        self._m, self._v = np.zeros(k), np.zeros(k)
        return np.zeros(k)

    def _update(self, k, theta, r, pi, d, d_E):
        g = np.tensordot(self._Phi, d - d_E, axes=([0, 1], [0, 1]))
        if self.optimizer == "sgd":
            return theta - self.lr * g
        b1, b2 = 0.9, 0.999
        self._m = b1 * self._m + (1 - b1) * g
        self._v = b2 * self._v + (1 - b2) * g * g
        mh, vh = self._m / (1 - b1 ** (k + 1)), self._v / (1 - b2 ** (k + 1))
        return theta - self.lr * mh / (np.sqrt(vh) + 1e-8)


def _imitation():
    try:
        from imitation.algorithms import mce_irl
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        raise ImportError(f"imitation's MCE code is not importable here ({e}); "
                          "install it with `pip install --no-deps imitation`") from e
    return mce_irl


def imitation_partition_fh(env, reward):
    """``imitation.algorithms.mce_irl.mce_partition_fh`` on an occirl env (finite horizon, state reward)."""
    return _imitation().mce_partition_fh(env, reward=np.asarray(reward, dtype=float))


def imitation_occupancy(env, reward):
    """``imitation``'s ``mce_occupancy_measures``: ``(D (H+1, S), Dcum (S,))``."""
    return _imitation().mce_occupancy_measures(env, reward=np.asarray(reward, dtype=float))
