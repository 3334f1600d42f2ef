"""A locality-aware QFIM surrogate for quantum natural gradient, estimated from classical shadows.

Public API (PennyLane's idiom)::

    opt = ShadowQNGOptimizer(stepsize=0.1, k=2, shots=500, lam=0.1)
    theta, energy = opt.step_and_cost(cost, theta)       # cost: any QNode returning qml.expval
    F = surrogate_qfim(cost, theta, k=2, shots=None)     # the surrogate QFIM (exact expectations)
"""

from shadowqng.ledger import ShotLedger
from shadowqng.surrogate import (
    ShadowQNGOptimizer,
    metric_tensor_fn,
    natural_direction,
    propagate_generators,
    surrogate_qfim,
)

__all__ = [
    "ShadowQNGOptimizer",
    "ShotLedger",
    "metric_tensor_fn",
    "natural_direction",
    "propagate_generators",
    "surrogate_qfim",
]
__version__ = "0.1.0"
