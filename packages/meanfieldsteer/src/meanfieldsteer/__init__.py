"""meanfieldsteer — A Mean-Field Framework for Inference-Time Distributional Control of Diffusion Models."""

from meanfieldsteer.diffusion import GaussianMixture, VPSchedule
from meanfieldsteer.ground_truth import gaussian_mean_tilt, solve_tilt_1d
from meanfieldsteer.particles import WeightedParticles
from meanfieldsteer.rewards import KDEEntropyReward, LinearReward, MeanReward, MeasureReward, MMDReward
from meanfieldsteer.sampler import MeanFieldSampler

__all__ = ["GaussianMixture", "KDEEntropyReward", "LinearReward", "MMDReward", "MeanFieldSampler", "MeanReward",
           "MeasureReward", "VPSchedule", "WeightedParticles", "gaussian_mean_tilt", "solve_tilt_1d"]
__version__ = "0.1.0"
