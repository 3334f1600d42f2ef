"""occirl — occupancy-space natural-gradient reward updates for inverse reinforcement learning.

Public API: :func:`soft_value_iteration`, :func:`occupancy`, :func:`empirical_occupancy`,
:class:`OccupancyNaturalGradientIRL`, :class:`MCEIRL`, :func:`mirror_descent_policy`, and the gymnasium
environments ``occirl/GridWorld-v0``, ``occirl/Garnet-v0``, ``occirl/TabularMDP-v0`` (registered on import).
"""

from occirl import envs as _envs  # noqa: F401  (registers the gymnasium environments)
from occirl.baselines import MCEIRL
from occirl.envs import GarnetEnv, GridWorldEnv, TabularMDPEnv
from occirl.mdp import empirical_occupancy, expert_nll, mce_dual, occupancy, occupancy_jacobian, soft_value_iteration
from occirl.method import OccupancyNaturalGradientIRL, mirror_descent_policy, quadrature_step

__all__ = ["soft_value_iteration", "occupancy", "empirical_occupancy", "mce_dual", "expert_nll",
           "occupancy_jacobian", "OccupancyNaturalGradientIRL", "MCEIRL", "mirror_descent_policy",
           "quadrature_step", "TabularMDPEnv", "GridWorldEnv", "GarnetEnv"]
__version__ = "0.1.0"
