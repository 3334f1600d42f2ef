"""lvqmark — L-VQVAE and LVQMark: local-window VQ tokenization and robust watermarking for multivariate time series."""

from lvqmark.baselines import sample_median
from lvqmark.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
