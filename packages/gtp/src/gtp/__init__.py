"""gtp — Generative Trajectory Planning (GTP): a diffusion prior over action sequences refined with learned models."""

import gymnasium as _gym

from gtp.baselines import TD3BC, sac_reference
from gtp.data import generate_dataset, load_dataset
from gtp.envs import TwoCorridorMaze
from gtp.fit import LearnedModels, fit_models
from gtp.models import DynamicsEnsemble, RewardModel, ValueFunction
from gtp.planners import CEMPlanner, GTPPlanner, MPPIPlanner, PriorPolicy, RandomShootingPlanner
from gtp.prior import DiffusionPrior
from gtp.rollout import evaluate

if "gtp/TwoCorridorMaze-v0" not in _gym.registry:
    _gym.register("gtp/TwoCorridorMaze-v0", entry_point="gtp.envs:TwoCorridorMaze", max_episode_steps=200)

__all__ = [
    "CEMPlanner",
    "DiffusionPrior",
    "DynamicsEnsemble",
    "GTPPlanner",
    "LearnedModels",
    "MPPIPlanner",
    "PriorPolicy",
    "RandomShootingPlanner",
    "RewardModel",
    "TD3BC",
    "TwoCorridorMaze",
    "ValueFunction",
    "evaluate",
    "fit_models",
    "generate_dataset",
    "load_dataset",
    "sac_reference",
]
__version__ = "0.1.0"
