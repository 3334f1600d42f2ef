"""tmevolve — TMEvolve: concept-guided tumor-microenvironment evolution over WSI patch graphs for MIL."""

from tmevolve.baselines import sample_median
from tmevolve.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
