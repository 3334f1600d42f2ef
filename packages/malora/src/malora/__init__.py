"""malora — MaLoRA: margin-based, training-free LoRA merging with optimal mixing coefficients."""

from malora.margins import normalized_margins

__all__ = ["normalized_margins"]
__version__ = "0.1.0"
