"""driftbench — Models Recall What They Violate: Constraint Adherence in Multi-Turn LLM Ideation."""

from driftbench.baselines import sample_median
from driftbench.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
