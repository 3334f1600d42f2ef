"""loopedlm — A Mechanistic Analysis of Looped Reasoning Language Models."""

from loopedlm.baselines import sample_median
from loopedlm.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
