"""metaknow — Models That Know How Evaluations Are Designed Score Safer."""

from metaknow.baselines import sample_median
from metaknow.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
