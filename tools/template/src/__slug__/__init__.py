"""__slug__ — __title__."""

from __slug__.baselines import sample_median
from __slug__.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
