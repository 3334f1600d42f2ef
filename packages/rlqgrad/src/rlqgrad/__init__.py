"""rlqgrad — RLQ-Grad: a PPO policy that proposes parameter updates for quantum neural networks."""

from rlqgrad.baselines import sample_median
from rlqgrad.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
