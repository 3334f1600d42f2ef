"""Learned models the planner scores with: a batched dynamics ensemble, a reward MLP and a value
function fitted by TD with a target network.

Every model keeps its input normalisation as buffers (fitted from the training data), so its
``state_dict`` is self-contained. Observations and actions go in and out in the environment's
units; actions are scaled to [-1, 1] from the bounds ``act_low``/``act_high`` inside.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn


def _check_dim(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    return int(v)


def check_obs(obs, obs_dim: int, name: str = "obs") -> torch.Tensor:
    """``obs`` as a float tensor ``(B, obs_dim)``; a clear error for wrong shapes and NaN/inf."""
    t = torch.as_tensor(np.asarray(obs, dtype=np.float32) if not torch.is_tensor(obs) else obs)
    t = t.float()
    if t.ndim == 1:
        t = t[None]
    if t.ndim != 2 or t.shape[-1] != obs_dim:
        raise ValueError(f"{name} must have shape (obs_dim,) or (B, obs_dim) with obs_dim={obs_dim}, "
                         f"got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


class Normalised(nn.Module):
    """Observation mean/std and action bounds as buffers (set by :meth:`set_stats`)."""

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.obs_dim, self.act_dim = _check_dim("obs_dim", obs_dim), _check_dim("act_dim", act_dim)
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))
        self.register_buffer("act_low", -torch.ones(act_dim))
        self.register_buffer("act_high", torch.ones(act_dim))

    @torch.no_grad()
    def set_stats(self, obs, act_low, act_high) -> None:
        obs = torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=self.obs_mean.device)
        self.obs_mean.copy_(obs.mean(0))
        self.obs_std.copy_(obs.std(0).clamp_min(1e-3))
        lo = torch.as_tensor(np.asarray(act_low, dtype=np.float32).reshape(-1))
        hi = torch.as_tensor(np.asarray(act_high, dtype=np.float32).reshape(-1))
        if lo.shape != (self.act_dim,) or hi.shape != (self.act_dim,) or not bool((hi > lo).all()):
            raise ValueError(f"action bounds must be ({self.act_dim},) with high > low, got {lo}, {hi}")
        self.act_low.copy_(lo.to(self.act_low.device))
        self.act_high.copy_(hi.to(self.act_high.device))

    def norm_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs - self.obs_mean) / self.obs_std

    def norm_act(self, act: torch.Tensor) -> torch.Tensor:
        return 2 * (act - self.act_low) / (self.act_high - self.act_low) - 1

    def unnorm_act(self, a: torch.Tensor) -> torch.Tensor:
        return self.act_low + (a + 1) * (self.act_high - self.act_low) / 2


def mlp(inp: int, hidden: int, out: int, layers: int = 2) -> nn.Sequential:
    mods, d = [], inp
    for _ in range(layers):
        mods += [nn.Linear(d, hidden), nn.SiLU()]
        d = hidden
    return nn.Sequential(*mods, nn.Linear(d, out))


class EnsembleLinear(nn.Module):
    """``E`` independent linear layers applied in one batched call: ``(E, B, in) → (E, B, out)``."""

    def __init__(self, members: int, inp: int, out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(members, inp, out))
        self.bias = nn.Parameter(torch.empty(members, 1, out))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class DynamicsEnsemble(Normalised):
    """``members`` MLPs (``layers`` × ``hidden``) predicting the normalised state change.

    ŝ' = s + μ_Δ + σ_Δ · f_e([s̃, ã]) for member e, all members in one batched call
    (:class:`EnsembleLinear`). :meth:`forward` returns every member's prediction, :meth:`step` the
    ensemble mean the planner scores with.

    Args:
        obs_dim, act_dim: sizes. members: ensemble size (5). hidden, layers: MLP size (2 × 128).
    """

    def __init__(self, obs_dim: int, act_dim: int, *, members: int = 5, hidden: int = 128, layers: int = 2):
        super().__init__(obs_dim, act_dim)
        self.members, self.hidden, self.layers = (_check_dim("members", members), _check_dim("hidden", hidden),
                                                  _check_dim("layers", layers))
        dims = [obs_dim + act_dim] + [hidden] * layers + [obs_dim]
        self.net = nn.ModuleList(EnsembleLinear(members, a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.register_buffer("delta_mean", torch.zeros(obs_dim))
        self.register_buffer("delta_std", torch.ones(obs_dim))

    def config(self) -> dict:
        return {"obs_dim": self.obs_dim, "act_dim": self.act_dim, "members": self.members,
                "hidden": self.hidden, "layers": self.layers}

    def _raw(self, x: torch.Tensor) -> torch.Tensor:
        for i, lin in enumerate(self.net):
            x = lin(x)
            if i < len(self.net) - 1:
                x = torch.nn.functional.silu(x)
        return x

    def inputs(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.norm_obs(obs), self.norm_act(act)], -1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Next-state predictions of every member: ``(B, d), (B, a) → (E, B, d)``.

        Inputs may also be ``(E, B, ·)`` (a different batch per member, as in training).
        """
        x = self.inputs(obs, act)
        if x.ndim == 2:
            x = x.expand(self.members, *x.shape)
        return obs + self.delta_mean + self.delta_std * self._raw(x)

    def member_forward(self, e: int, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Member ``e`` alone (a plain loop over its layers; the reference for the batched call)."""
        x = self.inputs(obs, act)
        for i, lin in enumerate(self.net):
            x = x @ lin.weight[e] + lin.bias[e, 0]
            if i < len(self.net) - 1:
                x = torch.nn.functional.silu(x)
        return obs + self.delta_mean + self.delta_std * x

    def step(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Ensemble-mean next state ``(B, d)``."""
        return self.forward(obs, act).mean(0)


class RewardModel(Normalised):
    """r̂(s, a): an MLP (``layers`` × ``hidden``) on normalised inputs, standardised output."""

    def __init__(self, obs_dim: int, act_dim: int, *, hidden: int = 128, layers: int = 2):
        super().__init__(obs_dim, act_dim)
        self.hidden, self.layers = _check_dim("hidden", hidden), _check_dim("layers", layers)
        self.net = mlp(obs_dim + act_dim, hidden, 1, layers)
        self.register_buffer("r_mean", torch.zeros(()))
        self.register_buffer("r_std", torch.ones(()))

    def config(self) -> dict:
        return {"obs_dim": self.obs_dim, "act_dim": self.act_dim, "hidden": self.hidden, "layers": self.layers}

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.norm_obs(obs), self.norm_act(act)], -1)
        return self.r_mean + self.r_std * self.net(x).squeeze(-1)


class ValueFunction(Normalised):
    """V̂(s) of the data's behaviour, fitted by TD with a Polyak-averaged target network.

    Fitted TD (:meth:`fit`) minimises  E[(V(s) − r − γ (1 − done) V̄(s'))²]  with V̄ the target
    network, V̄ ← (1 − τ) V̄ + τ V after every step. The output is scaled by ``scale`` (the reward
    std / (1 − γ), set by :meth:`fit`) so the network works in units of order one.
    """

    def __init__(self, obs_dim: int, *, hidden: int = 128, layers: int = 2):
        super().__init__(obs_dim, 1)
        self.hidden, self.layers = _check_dim("hidden", hidden), _check_dim("layers", layers)
        self.net = mlp(obs_dim, hidden, 1, layers)
        self.register_buffer("scale", torch.ones(()))
        self.register_buffer("shift", torch.zeros(()))

    def config(self) -> dict:
        return {"obs_dim": self.obs_dim, "hidden": self.hidden, "layers": self.layers}

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.shift + self.scale * self.net(self.norm_obs(obs)).squeeze(-1)

    def fit(self, obs, rewards, next_obs, terminals, *, gamma: float = 0.99, steps: int = 3000,
            batch_size: int = 256, lr: float = 1e-3, tau: float = 0.02, discounts=None,
            generator=None) -> list[float]:
        """Fitted TD on transitions (arrays of equal length). Returns the loss every 100 steps.

        ``discounts``: optional per-transition bootstrap discounts (n-step targets from
        :func:`gtp.data.n_step_targets`: ``rewards`` are then the n-step returns and ``next_obs``
        the bootstrap states); by default γ (1 − terminal).
        """
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1), got {gamma}")
        dev = self.obs_mean.device
        o = torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=dev)
        o2 = torch.as_tensor(np.asarray(next_obs), dtype=torch.float32, device=dev)
        r = torch.as_tensor(np.asarray(rewards), dtype=torch.float32, device=dev).reshape(-1)
        d = torch.as_tensor(np.asarray(terminals), dtype=torch.float32, device=dev).reshape(-1)
        disc = gamma * (1 - d) if discounts is None else torch.as_tensor(np.asarray(discounts), dtype=torch.float32,
                                                                          device=dev)
        with torch.no_grad():
            self.obs_mean.copy_(o.mean(0))
            self.obs_std.copy_(o.std(0).clamp_min(1e-3) if len(o) > 1 else torch.ones_like(self.obs_std))
            # the fixed point of the batch-averaged Bellman equation V = E[r] + E[disc] V sets the units
            dbar = float(disc.mean().clamp(0.0, 1 - 1e-3))
            self.shift.copy_(r.mean() / (1 - dbar))
            self.scale.copy_((r.std() if len(r) > 1 else r.abs().mean()).clamp_min(1e-3) / math.sqrt(1 - dbar**2))
        target = copy.deepcopy(self.net).requires_grad_(False)
        opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        n, losses = len(o), []
        for it in range(steps):
            idx = torch.randint(0, n, (min(batch_size, n),), generator=generator).to(dev)
            with torch.no_grad():
                v2 = self.shift + self.scale * target(self.norm_obs(o2[idx])).squeeze(-1)
                y = r[idx] + disc[idx] * v2
            pred = self(o[idx])
            loss = (((pred - y) / self.scale) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                for p, pt in zip(self.net.parameters(), target.parameters()):
                    pt.lerp_(p, tau)
            if it % 100 == 0:
                losses.append(loss.item())
        return losses
