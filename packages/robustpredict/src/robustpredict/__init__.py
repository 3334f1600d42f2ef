"""Robustified follow-the-prediction for contextual optimization.

Wrap any black-box predictor ``x -> ŷ`` into a decision policy that acts optimally against the
worst state within ε of the prediction, with ε learned from held-out data (the bound's rule, a
conformal tail estimate, or cross-validation); closed forms for posted pricing, ski rental and house
flipping and a generic numerical min–max for your own problem. The policies are scikit-learn estimators.
"""

from robustpredict.baselines import FixedShading, RICh
from robustpredict.problems import CustomProblem, DecisionProblem, HouseFlipping, PostedPricing, SkiRental
from robustpredict.robust import (
    FollowThePrediction,
    RobustPolicy,
    conformal_epsilon,
    epsilon_for,
    estimate_eta,
    excess_loss,
    robust_gap,
    shade_grid,
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
    "conformal_epsilon",
    "epsilon_for",
    "estimate_eta",
    "excess_loss",
    "robust_gap",
    "shade_grid",
    "theoretical_bound",
]
__version__ = "0.2.0"
