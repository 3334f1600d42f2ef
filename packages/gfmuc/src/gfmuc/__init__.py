"""gfmuc — GFM-UC: a graph foundation model for unified unsupervised graph clustering."""

from gfmuc.baselines import sample_median
from gfmuc.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
