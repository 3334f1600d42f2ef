"""consensusgame — Modelling Opinion Dynamics at Scale with Deep MARL (Seier et al., 2026).

A JAX consensus and truth-finding game on graphs, IPPO with general-sum other-play, a
neighbour-attention importance layer and hand-crafted opinion-dynamics baselines.
"""

from consensusgame import graphs
from consensusgame.attention import NeighbourAttention, fit_importance
from consensusgame.baselines import make_baseline
from consensusgame.game import ConsensusGame, EnvParams, EnvState
from consensusgame.ippo import (
    PPOConfig,
    load_checkpoint,
    load_params,
    make_policy,
    mixed_policy,
    relabel_params,
    save_params,
    train_ippo,
)
from consensusgame.marl import MultiAgentConsensusGame, jaxmarl_env
from consensusgame.metrics import evaluate, rollout
from consensusgame.policy import Policy

__all__ = [
    "ConsensusGame", "EnvParams", "EnvState", "NeighbourAttention", "PPOConfig", "Policy", "evaluate",
    "MultiAgentConsensusGame", "fit_importance", "graphs", "jaxmarl_env", "load_checkpoint", "load_params", "make_baseline", "make_policy", "mixed_policy", "relabel_params", "rollout",
    "save_params", "train_ippo",
]
__version__ = "0.2.0"
