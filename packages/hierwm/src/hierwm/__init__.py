"""hierwm — Hierarchical driving world model: diffusion-forcing pretraining, then teacher-forcing fine-tuning."""

from hierwm.baselines import sample_median
from hierwm.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
