"""loopedlm — A Mechanistic Analysis of Looped Reasoning Language Models (Blayney et al., arXiv 2604.11791)."""

from loopedlm.baselines import feedforward_control, naive_trace, uniform_causal_colsum
from loopedlm.metrics import (
                              attention_similarity,
                              classify_limits,
                              colsum_concentration,
                              fixed_point_metrics,
                              representation_entropy,
                              shuffled_null,
                              sink_rate,
                              stage_correlation,
)
from loopedlm.model import LoopedConfig, LoopedLM
from loopedlm.trace import HFLoopAdapter, LoopedModelAdapter, RecurrenceTrace, trace

__all__ = [
    "HFLoopAdapter", "LoopedConfig", "LoopedLM", "LoopedModelAdapter", "RecurrenceTrace", "attention_similarity",
    "classify_limits", "colsum_concentration", "feedforward_control", "fixed_point_metrics", "naive_trace",
    "representation_entropy", "shuffled_null", "sink_rate", "stage_correlation", "trace", "uniform_causal_colsum",
]
__version__ = "0.1.0"
