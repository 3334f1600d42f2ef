"""m2le — M²LE (Merging Strength Modulation via Joint Loss Estimation): Hessian-guided element-wise LoRA
merging for continual learning (HIM + TSP), on any torch model through PEFT LoRA."""

from m2le.fisher import empirical_fisher
from m2le.m2le import M2LE
from m2le.merge import him_modulation, merge_lora, pm_alpha
from m2le.metrics import cl_metrics

__all__ = ["M2LE", "cl_metrics", "empirical_fisher", "him_modulation", "merge_lora", "pm_alpha"]
__version__ = "0.1.0"
