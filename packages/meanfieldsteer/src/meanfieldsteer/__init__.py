"""meanfieldsteer — A Mean-Field Framework for Inference-Time Distributional Control of Diffusion Models."""

from meanfieldsteer.baselines import sample_median
from meanfieldsteer.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
