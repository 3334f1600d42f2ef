"""modellens — ModelLens: model recommendation in the wild from public leaderboard records.

Rank models (including unseen ones) for datasets (including unseen ones) from scattered leaderboard
records ``(model, dataset, task, metric, score)``, without running any candidate on the target.
"""

from modellens.data import load_mini_leaderboard
from modellens.lens import ModelLens
from modellens.metrics import leep, logme, nce, ranking_metrics
from modellens.records import cold_start_split, load_records

__all__ = ["ModelLens", "cold_start_split", "leep", "load_mini_leaderboard", "load_records", "logme", "nce",
           "ranking_metrics"]
__version__ = "0.1.0"
