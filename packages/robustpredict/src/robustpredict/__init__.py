"""Robustified follow-the-prediction for contextual optimization.

Wrap any black-box predictor ``x -> ŷ`` into a decision policy that acts optimally against the
worst state within ε of the prediction, with ε set from held-out error; closed forms for posted
pricing, ski rental and house flipping and a generic numerical min–max for your own problem.
"""

from robustpredict.baselines import FixedShading, RICh
from robustpredict.problems import CustomProblem, DecisionProblem, HouseFlipping, PostedPricing, SkiRental
from robustpredict.robust import (
    FollowThePrediction,
    RobustPolicy,
    epsilon_for,
    estimate_eta,
    excess_loss,
    robust_gap,
    theoretical_bound,
)

__all__ = [
    "CustomProblem",
    "DecisionProblem",
    "FixedShading",
    "FollowThePrediction",
    "HouseFlipping",
    "PostedPricing",
    "RICh",
    "RobustPolicy",
    "SkiRental",
    "epsilon_for",
    "estimate_eta",
    "excess_loss",
    "robust_gap",
    "theoretical_bound",
]
__version__ = "0.1.0"
