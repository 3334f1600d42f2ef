"""Monarch-structured attention for real-time autoregressive video diffusion (MonarchRT)."""

from monarchrt.kernels import block_attention
from monarchrt.monarch import (
    MonarchAttention,
    MonarchKVCache,
    dense_flops,
    make_plan,
    monarch_attention,
    monarch_factors,
    monarch_flops,
)

__all__ = [
    "MonarchAttention",
    "MonarchKVCache",
    "block_attention",
    "dense_flops",
    "make_plan",
    "monarch_attention",
    "monarch_factors",
    "monarch_flops",
]
__version__ = "0.1.0"
