"""malora — MaLoRA: margin-based, training-free LoRA merging with optimal mixing coefficients."""

from malora.baselines import sample_median
from malora.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
