"""RLQ-Grad as a PennyLane optimizer: ``step(cost, *params)`` with a frozen policy, never a gradient."""

from __future__ import annotations

import math

import numpy as np
import torch

from paperworks import check_float
from rlqgrad.gradients import EvalLedger
from rlqgrad.policy import UpdatePolicy


class RLQGradOptimizer:
    """Apply the update a frozen :class:`UpdatePolicy` proposes, in PennyLane's optimizer idiom.

    Update rule, with ``o_t = (θ_t, C_t, acc_t, Δθ_{t−1}, C_t − C_{t−1})``::

        Δθ_t ~ N(μ_φ(o_t), σ_φ²),   θ_{t+1} = θ_t + scale·Δθ_t,   C_{t+1} = cost(θ_{t+1})   (1 evaluation)

    Each ``step`` costs exactly one call of ``cost`` (its next observation), recorded in ``ledger``;
    the very first step also evaluates the starting point. ``cost`` can be any callable returning a
    finite scalar: a QNode with ``diff_method=None``, a Python function of QNodes, or an
    :class:`~rlqgrad.circuit.QNNCost` (whose ``loss_acc`` gives the accuracy from the same evaluation).

    Args:
        policy: a meta-trained :class:`UpdatePolicy` (frozen here if it is not yet: its weights never
            change in ``step``).
        accuracy: optional callable ``accuracy(*params) -> float`` in [0, 1] fed to the policy (default 0).
        scale: multiplies the proposed update (the step-size grid of the experiments).
        ledger: an :class:`EvalLedger` (a fresh one by default, at ``.ledger``).
        seed: seed of the action noise.

    Example:
        >>> opt = RLQGradOptimizer(policy)
        >>> for _ in range(20):
        ...     params, c = opt.step_and_cost(circuit_cost, params)
    """

    def __init__(self, policy: UpdatePolicy, *, accuracy=None, scale: float = 1.0, ledger: EvalLedger | None = None,
                 seed: int = 0):
        if not isinstance(policy, UpdatePolicy):
            raise TypeError(f"policy must be an UpdatePolicy, got {type(policy).__name__}")
        if accuracy is not None and not callable(accuracy):
            raise TypeError("accuracy must be a callable accuracy(*params) -> float, or None")
        self.policy = policy if policy.frozen else policy.freeze()
        self.accuracy = accuracy
        self.scale = check_float(scale, "scale", minimum=0.0, open_minimum=True)
        if ledger is not None and not isinstance(ledger, EvalLedger):
            raise TypeError(f"ledger must be an EvalLedger or None, got {type(ledger).__name__}")
        self.ledger = ledger if ledger is not None else EvalLedger()
        self.gen = torch.Generator().manual_seed(int(seed))
        self.steps = 0
        self._state = None  # (flat θ, loss, acc, Δθ_prev, Δloss)

    # helpers ------------------------------------------------------------------------------------------

    @staticmethod
    def _flatten(params) -> tuple[np.ndarray, list]:
        if not params:
            raise ValueError("step needs at least one parameter array")
        flats, shapes = [], []
        for i, p in enumerate(params):
            if isinstance(p, (str, bytes)) or isinstance(p, bool):
                raise TypeError(f"params[{i}] must be numeric, got {type(p).__name__}")
            a = np.asarray(p.detach().cpu().numpy() if torch.is_tensor(p) else p, dtype=float)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"params[{i}] must be finite (found NaN or inf)")
            flats.append(a.reshape(-1))
            shapes.append(np.shape(a))
        return np.concatenate(flats), shapes

    @staticmethod
    def _unflatten(flat: np.ndarray, params, shapes):
        from pennylane import numpy as pnp

        out, k = [], 0
        for p, s in zip(params, shapes):
            m = int(np.prod(s)) if s else 1
            v = flat[k:k + m].reshape(s)
            k += m
            if torch.is_tensor(p):
                out.append(torch.as_tensor(v, dtype=p.dtype))
            elif isinstance(p, pnp.tensor):
                out.append(pnp.array(v, requires_grad=p.requires_grad))
            else:
                out.append(v if s else float(v))
        return out[0] if len(out) == 1 else tuple(out)

    def _evaluate(self, cost, args, kwargs) -> tuple[float, float]:
        loss_acc = getattr(cost, "loss_acc", None)
        if loss_acc is not None and self.accuracy is None and len(args) == 1 and not kwargs:
            loss, acc = loss_acc(args[0])
        else:
            loss = cost(*args, **kwargs)
            acc = None
        self.ledger.record(1)
        a = np.asarray(loss.detach().cpu().numpy() if torch.is_tensor(loss) else loss, dtype=float)
        if a.size != 1:
            raise ValueError(f"cost must return a scalar, got shape {a.shape}")
        loss = float(a.reshape(()))
        if not math.isfinite(loss):
            raise ValueError(f"cost returned a non-finite value ({loss}) at step {self.steps}")
        if acc is None:
            acc = float(self.accuracy(*args)) if self.accuracy is not None else 0.0
        return loss, acc

    # PennyLane API ------------------------------------------------------------------------------------

    def step_and_cost(self, cost, *params, **kwargs):
        """Update the parameters once; returns ``(new_params, cost_before_the_step)`` as PennyLane does."""
        if not callable(cost):
            raise TypeError("cost must be callable")
        theta, shapes = self._flatten(params)
        self.policy.check_size(theta.size)
        if self._state is None or self._state[0].shape != theta.shape or not np.array_equal(self._state[0], theta):
            loss, acc = self._evaluate(cost, params, kwargs)
            self._state = (theta, loss, acc, np.zeros_like(theta), 0.0)
        _, loss, acc, dprev, dloss = self._state
        obs = self.policy.observe(theta, loss, acc, dprev, dloss)
        with torch.no_grad():
            mean, std = self.policy.dist_params(obs)
            step = mean + std * torch.randn(mean.shape, generator=self.gen, dtype=mean.dtype)
        step = self.scale * step.double().numpy()
        if not np.all(np.isfinite(step)):
            raise FloatingPointError(f"the policy proposed a NaN/inf update at step {self.steps}; stopping")
        new_theta = theta + step
        new_params = self._unflatten(new_theta, params, shapes)
        args = new_params if isinstance(new_params, tuple) else (new_params,)
        new_loss, new_acc = self._evaluate(cost, args, kwargs)
        self._state = (new_theta, new_loss, new_acc, step, new_loss - loss)
        self.steps += 1
        return new_params, loss

    def step(self, cost, *params, **kwargs):
        """Update the parameters once (one circuit evaluation); returns the new parameters."""
        return self.step_and_cost(cost, *params, **kwargs)[0]

    @property
    def last_cost(self) -> float | None:
        """The cost at the latest parameters (already evaluated)."""
        return None if self._state is None else self._state[1]
