"""mathinterest — A Matter of Interest: Understanding Interestingness of Math Problems in Humans and Language Models."""

from mathinterest.baselines import sample_median
from mathinterest.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
