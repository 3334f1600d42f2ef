"""gtp — Generative Trajectory Planning (GTP): a diffusion prior over action sequences refined with learned models."""

from gtp.baselines import sample_median
from gtp.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
