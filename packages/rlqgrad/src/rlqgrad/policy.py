"""π_φ: the spectrally normalised actor-critic that proposes parameter updates Δθ.

Observation (per parameter coordinate k, shape ``(P, 7)``)::

    [sin θ_k, cos θ_k, 10·Δθ_prev,k, loss, accuracy, 10·Δloss_prev, −100·Δloss_prev·Δθ_prev,k]

θ enters through its sine and cosine (angles are periodic); the previous loss change (the last reward)
rides with the loss, and their product with the previous step is the one-sample finite-difference signal
that any zeroth-order method can form from these inputs (all inferred: the abstract names the inputs only).
The actor's output passes a learnable gain initialised at 0.01 (CleanRL initialises its last actor layer
at scale 0.01; a spectrally normalised layer cannot be initialised small). Action: ``Δθ ~ N(μ_φ(obs), σ²)`` with ``μ = max_step·tanh(·)`` and a learned,
state-independent ``σ = exp(log_std)``. Every ``nn.Linear`` carries ``torch.nn.utils.parametrizations.
spectral_norm`` (largest singular value 1), so the actor is 1-Lipschitz before its output scale.

Two shapes (both inferred; the abstract fixes neither): ``coordinatewise=False`` reads the whole flat
observation (``7P`` inputs) and emits all ``P`` means, one policy per circuit size; ``coordinatewise=True``
applies one small MLP to each coordinate's 7 features, so one policy serves every circuit size.
The critic reads the global features (loss, accuracy, Δloss, mean |Δθ_prev|).

Note, by construction: the spread of Δθ comes from the weights and the action noise σ, never from the
circuit's gradient; on a barren plateau the loss and accuracy it observes flatten like any zeroth-order
signal, so a flat output variance says nothing about the landscape.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

from paperworks import atomic_torch_save, check_float, check_int

N_FEATURES = 7


def _mlp(n_in: int, hidden: tuple[int, ...], n_out: int) -> nn.Sequential:
    layers, d = [], n_in
    for h in hidden:
        layers += [spectral_norm(nn.Linear(d, h)), nn.Tanh()]
        d = h
    layers.append(spectral_norm(nn.Linear(d, n_out)))
    return nn.Sequential(*layers)


class UpdatePolicy(nn.Module):
    """Actor-critic MLP with spectral norm on every layer; Gaussian updates Δθ.

    Args:
        n_params: number of circuit parameters P (``None`` allowed when ``coordinatewise=True``).
        hidden: hidden widths of actor and critic.
        coordinatewise: share one per-coordinate MLP across coordinates (and circuit sizes).
        max_step: bound on the mean update per coordinate (radians).
        init_std: initial action noise σ.

    Shapes: ``observe`` → ``(P, 7)`` (any leading batch dims work in ``dist_params``/``value``).

    Example:
        >>> pi = UpdatePolicy(16)
        >>> obs = pi.observe(np.zeros(16), 0.5, 0.5, np.zeros(16), 0.0)
        >>> mean, std = pi.dist_params(obs)
        >>> mean.shape
        torch.Size([16])
    """

    def __init__(self, n_params: int | None, *, hidden=(64, 64), coordinatewise: bool = False,
                 max_step: float = 0.2, init_std: float = 0.05):
        super().__init__()
        if not isinstance(coordinatewise, bool):
            raise TypeError(f"coordinatewise must be a bool, got {type(coordinatewise).__name__}")
        if n_params is None and not coordinatewise:
            raise ValueError("n_params is required unless coordinatewise=True")
        self.n_params = check_int(n_params, "n_params", minimum=1, optional=True)
        if isinstance(hidden, int) or not all(isinstance(h, int) and not isinstance(h, bool) and h >= 1
                                              for h in hidden):
            raise ValueError(f"hidden must be a sequence of positive ints, got {hidden!r}")
        self.hidden = tuple(int(h) for h in hidden)
        self.coordinatewise = coordinatewise
        self.max_step = check_float(max_step, "max_step", minimum=0.0, open_minimum=True)
        self.init_std = check_float(init_std, "init_std", minimum=0.0, open_minimum=True)
        if coordinatewise:
            self.actor = _mlp(N_FEATURES, self.hidden, 1)
            self.log_std = nn.Parameter(torch.full((1,), math.log(self.init_std)))
        else:
            self.actor = _mlp(N_FEATURES * self.n_params, self.hidden, self.n_params)
            self.log_std = nn.Parameter(torch.full((self.n_params,), math.log(self.init_std)))
        self.gain = nn.Parameter(torch.tensor(0.01))
        self.critic = _mlp(4, self.hidden, 1)
        self.frozen = False

    def config(self) -> dict:
        return {"n_params": self.n_params, "hidden": list(self.hidden), "coordinatewise": self.coordinatewise,
                "max_step": self.max_step, "init_std": self.init_std}

    # observation -------------------------------------------------------------------------------------

    def check_size(self, P: int) -> None:
        if not self.coordinatewise and P != self.n_params:
            raise ValueError(f"params hold {P} values but the policy was built for n_params = {self.n_params}")

    def observe(self, theta, loss: float, acc: float, dtheta_prev, dloss: float) -> torch.Tensor:
        """The observation ``(P, 7)`` from flat ``theta``, scalars and the previous update."""
        th = torch.as_tensor(np.asarray(theta, dtype=np.float32).reshape(-1))
        dp = torch.as_tensor(np.asarray(dtheta_prev, dtype=np.float32).reshape(-1))
        self.check_size(th.shape[0])
        g = torch.tensor([loss, acc, 10.0 * dloss], dtype=torch.float32).expand(th.shape[0], 3)
        fd = -100.0 * float(dloss) * dp
        return torch.cat([torch.sin(th)[:, None], torch.cos(th)[:, None], 10.0 * dp[:, None], g, fd[:, None]], dim=1)

    def observe_batch(self, theta, loss, acc, dtheta_prev, dloss) -> torch.Tensor:
        """Observations ``(N, P, 7)`` for ``N`` parameter vectors ``theta (N, P)`` and per-row scalars ``(N,)``."""
        th = torch.as_tensor(np.asarray(theta, dtype=np.float32))
        dp = torch.as_tensor(np.asarray(dtheta_prev, dtype=np.float32))
        self.check_size(th.shape[1])
        g = torch.as_tensor(np.stack([loss, acc, 10.0 * np.asarray(dloss)], axis=1), dtype=torch.float32)
        g = g[:, None, :].expand(-1, th.shape[1], -1)
        fd = -100.0 * torch.as_tensor(np.asarray(dloss), dtype=torch.float32)[:, None] * dp
        return torch.cat([torch.sin(th)[..., None], torch.cos(th)[..., None], 10.0 * dp[..., None], g, fd[..., None]],
                         dim=2)

    # heads ------------------------------------------------------------------------------------------

    def dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std of Δθ, both ``obs.shape[:-1]`` (i.e. ``(..., P)``)."""
        if self.coordinatewise:
            out = self.actor(obs).squeeze(-1)
        else:
            self.check_size(obs.shape[-2])
            out = self.actor(obs.reshape(*obs.shape[:-2], -1))
        mean = self.max_step * torch.tanh(self.gain * out)
        return mean, torch.exp(self.log_std).expand_as(mean)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        g = torch.cat([obs[..., 0, 3:6], obs[..., 2].abs().mean(-1, keepdim=True)], dim=-1)
        return self.critic(g).squeeze(-1)

    def forward(self, obs: torch.Tensor):
        return self.dist_params(obs)

    # deployment -------------------------------------------------------------------------------------

    def freeze(self) -> UpdatePolicy:
        """Converge the spectral norms' power iterations, then freeze (eval mode, no grads)."""
        self.train()
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    for _ in range(50):
                        _ = m.weight  # each access in train mode runs one power iteration
        self.eval()
        for p in self.parameters():
            p.requires_grad_(False)
        self.frozen = True
        return self

    def spectral_norms(self) -> list[float]:
        """Largest singular value of every layer's effective weight (≤ 1 by construction)."""
        with torch.no_grad():
            return [float(torch.linalg.matrix_norm(m.weight, 2)) for m in self.modules() if isinstance(m, nn.Linear)]

    def save(self, path) -> Path:
        """One self-contained file: config and weights (load with :meth:`load`)."""
        path = Path(path)
        atomic_torch_save({"config": self.config(), "state": self.state_dict(), "frozen": self.frozen}, path)
        return path

    @classmethod
    def load(cls, path) -> UpdatePolicy:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no policy file at {path}")
        blob = torch.load(path, weights_only=True)
        cfg = dict(blob["config"])
        cfg["hidden"] = tuple(cfg["hidden"])
        pi = cls(cfg.pop("n_params"), **cfg)
        pi.load_state_dict(blob["state"])
        if blob.get("frozen"):
            pi.eval()
            for p in pi.parameters():
                p.requires_grad_(False)
            pi.frozen = True
        return pi
