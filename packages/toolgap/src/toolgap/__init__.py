"""toolgap — Model-adaptive tool necessity and the knowing–doing gap in LLM tool use."""

from toolgap.baselines import sample_median
from toolgap.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
