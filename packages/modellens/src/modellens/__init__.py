"""modellens — ModelLens: model recommendation in the wild from public leaderboard records."""

from modellens.baselines import sample_median
from modellens.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
