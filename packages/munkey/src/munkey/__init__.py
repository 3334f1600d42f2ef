"""munkey — Rethinking Machine Unlearning: Models Designed to Forget via Key Deletion."""

from munkey.baselines import sample_median
from munkey.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
