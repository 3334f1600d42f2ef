"""rlqgrad — RLQ-Grad: a PPO policy that proposes parameter updates for quantum neural networks.

    import pennylane as qml
    from rlqgrad import HEA, UpdatePolicy, meta_train, RLQGradOptimizer

    hea = HEA(4, 2)
    policy = UpdatePolicy(None, coordinatewise=True)
    meta_train(policy, [hea.cost(X, y)], total_steps=4096)   # PPO, then frozen
    opt = RLQGradOptimizer(policy)                            # PennyLane's step/step_and_cost idiom
    params, c = opt.step_and_cost(cost, params)               # one circuit evaluation, no gradient
"""

from rlqgrad.circuit import HEA, QNNCost
from rlqgrad.gradients import EvalLedger, gradient, gradient_variance
from rlqgrad.optimizer import RLQGradOptimizer
from rlqgrad.policy import UpdatePolicy
from rlqgrad.ppo import meta_train

__all__ = ["HEA", "EvalLedger", "QNNCost", "RLQGradOptimizer", "UpdatePolicy", "gradient", "gradient_variance",
           "meta_train"]
__version__ = "0.1.0"
