"""matt — MATT: Model-Aware Tokenizer Transfer with Attention Influence Modeling."""

from matt.baselines import sample_median
from matt.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
