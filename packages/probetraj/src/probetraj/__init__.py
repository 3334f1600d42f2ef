"""probetraj — Monitoring the Internal Monologue: Probe Trajectories Reveal Reasoning Dynamics.

Probe trajectories (a probe's score at every chain-of-thought token) and their signal-processing
features as a monitor of a reasoning model's future answer; pooled probes (mean, last, max,
rolling-mean-max, MultiMax); a synthetic reasoning language and a tiny model to test them on.
"""

from probetraj.activations import ActivationSource, HFActivationSource, MonitorResult
from probetraj.baselines import BestPositionReadout, KeywordMonitor
from probetraj.features import FEATURES, OnlineFeatures, TrajectoryFeatures, trajectory_features
from probetraj.probe import POOLINGS, PooledProbe
from probetraj.world import ReasoningWorld, load_rollouts, planted_hmm, template_dataset

__all__ = [
    "FEATURES",
    "POOLINGS",
    "ActivationSource",
    "BestPositionReadout",
    "HFActivationSource",
    "KeywordMonitor",
    "MonitorResult",
    "OnlineFeatures",
    "PooledProbe",
    "ReasoningWorld",
    "TrajectoryFeatures",
    "load_rollouts",
    "planted_hmm",
    "template_dataset",
    "trajectory_features",
]
__version__ = "0.1.0"
