"""hebbrnn — Hebb-RNN: fast Hebbian plasticity and an orthogonal ordinal geometry for hierarchical sequences in working memory."""

from hebbrnn.baselines import sample_median
from hebbrnn.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
