"""Model-based bootstrap of controlled Markov chains (Su, Banerjee & Klabjan, 2026).

Confidence intervals for offline policy evaluation (``V^π``, ``Q^π``) and optimal values (``Q*``)
from data of an unknown, possibly history-dependent behaviour policy; RiverSwim as a gymnasium env.
"""

from cmcboot.baselines import EpisodicBootstrap, PluginCLT, delta_method
from cmcboot.bootstrap import ModelBootstrap, confidence_interval, count_transitions, estimate_kernel
from cmcboot.data import from_arrays, load_trajectories, riverswim_behaviours, rollout, simulate_datasets
from cmcboot.envs import FiniteMDPEnv, RiverSwimEnv, riverswim
from cmcboot.mdp import policy_evaluation, value_iteration

__all__ = [
    "EpisodicBootstrap",
    "FiniteMDPEnv",
    "ModelBootstrap",
    "PluginCLT",
    "RiverSwimEnv",
    "confidence_interval",
    "count_transitions",
    "delta_method",
    "estimate_kernel",
    "from_arrays",
    "load_trajectories",
    "policy_evaluation",
    "riverswim",
    "riverswim_behaviours",
    "rollout",
    "simulate_datasets",
    "value_iteration",
]
__version__ = "0.2.0"
