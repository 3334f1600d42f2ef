"""grace — GRACE: global concept decomposition of vision-language embeddings."""

from grace.baselines import sample_median
from grace.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
