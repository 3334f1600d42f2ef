"""m2le — M²LE (Merging Strength Modulation via Joint Loss Estimation): Hessian-guided element-wise LoRA merging for continual learning."""

from m2le.baselines import sample_median
from m2le.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
