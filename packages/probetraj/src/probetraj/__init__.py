"""probetraj — Monitoring the Internal Monologue: Probe Trajectories Reveal Reasoning Dynamics."""

from probetraj.baselines import sample_median
from probetraj.method import sample_mean

__all__ = ["sample_mean", "sample_median"]
__version__ = "0.1.0"
