"""latentwam — Being-H0.7: A Latent World-Action Model from Egocentric Videos."""

from latentwam.baselines import sample_median
from latentwam.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
