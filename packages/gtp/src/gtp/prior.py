"""The diffusion prior: a state-conditioned DDPM over action chunks, sampled with DDIM.

The prior models p(a_{0:H} | s): chunks of ``horizon`` actions, scaled to [-1, 1], noised by a
DDPM forward process with ``train_steps`` steps and the ``squaredcos_cap_v2`` schedule (final
ᾱ_T ≈ 6e-6, so sampling starts from the noise the network was trained on; diffusers' default
linear betas at 20 steps leave ᾱ_T ≈ 0.82). An MLP ε-network is trained with the ε-prediction loss

    L = E_{t, ε} ‖ε − ε_θ(√ᾱ_t a + √(1 − ᾱ_t) ε, t, s)‖²,

and sampling runs ``sample_steps`` deterministic DDIM steps (η = 0, "trailing" spacing, so the
first step starts at t = T − 1)::

    â_0 = clip((x_t − √(1 − ᾱ_t) ε_θ) / √ᾱ_t, −1, 1),   x_{t'} = √ᾱ_{t'} â_0 + √(1 − ᾱ_{t'}) ε_θ

:meth:`renoise` is the refinement GTP uses: re-noise given chunks to an intermediate DDIM step
and denoise them again, which moves a candidate to a nearby sample of the prior.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from diffusers import DDIMScheduler, DDPMScheduler
from torch import nn

from gtp.models import Normalised, _check_dim, check_obs


def timestep_embedding(t: torch.Tensor, dim: int = 32) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    x = t.float()[:, None] * freqs[None]
    return torch.cat([x.sin(), x.cos()], -1)


class DiffusionPrior(Normalised):
    """State-conditioned diffusion prior over action chunks ``(horizon, act_dim)``.

    Args:
        obs_dim, act_dim: sizes.
        horizon: chunk length H (16).
        hidden: width of the 3-layer MLP ε-network (256).
        train_steps: DDPM steps T (20). sample_steps: DDIM steps at test time (5).

    Example:
        >>> prior = DiffusionPrior(3, 1, horizon=16)
        >>> prior.sample(np.zeros(3), 8).shape
        torch.Size([8, 16, 1])
    """

    def __init__(self, obs_dim: int, act_dim: int, *, horizon: int = 16, hidden: int = 256,
                 train_steps: int = 20, sample_steps: int = 5, prediction_type: str = "v_prediction"):
        super().__init__(obs_dim, act_dim)
        if prediction_type not in ("v_prediction", "epsilon"):
            raise ValueError(f"prediction_type must be 'v_prediction' or 'epsilon', got {prediction_type!r}")
        self.prediction_type = prediction_type
        self.horizon = _check_dim("horizon", horizon)
        self.hidden = _check_dim("hidden", hidden)
        self.train_steps = _check_dim("train_steps", train_steps)
        self.sample_steps = _check_dim("sample_steps", sample_steps)
        if sample_steps > train_steps:
            raise ValueError(f"sample_steps ({sample_steps}) must be <= train_steps ({train_steps})")
        d = horizon * act_dim
        self.net = nn.Sequential(
            nn.Linear(d + obs_dim + 32, hidden), nn.Mish(), nn.Linear(hidden, hidden), nn.Mish(),
            nn.Linear(hidden, hidden), nn.Mish(), nn.Linear(hidden, d))
        self.ddpm = DDPMScheduler(num_train_timesteps=train_steps, beta_schedule="squaredcos_cap_v2",
                                  clip_sample=True, prediction_type=prediction_type)
        self.ddim = DDIMScheduler.from_config(self.ddpm.config, timestep_spacing="trailing")
        self.ddim.set_timesteps(sample_steps)

    def config(self) -> dict:
        return {"obs_dim": self.obs_dim, "act_dim": self.act_dim, "horizon": self.horizon, "hidden": self.hidden,
                "train_steps": self.train_steps, "sample_steps": self.sample_steps,
                "prediction_type": self.prediction_type}

    @property
    def alpha_bar_final(self) -> float:
        """ᾱ_T of the training schedule (≈ 0: the sampler starts from pure noise)."""
        return float(self.ddpm.alphas_cumprod[-1])

    def eps(self, x: torch.Tensor, t: torch.Tensor, obs_n: torch.Tensor) -> torch.Tensor:
        """ε_θ(x_t, t, s̃) for flat chunks ``x (B, H·A)``, timesteps ``t (B,)``, normalised obs ``(B, d)``."""
        return self.net(torch.cat([x, obs_n, timestep_embedding(t)], -1))

    def _check_actions(self, actions) -> torch.Tensor:
        a = torch.as_tensor(actions, dtype=torch.float32)
        if a.ndim != 3 or a.shape[1:] != (self.horizon, self.act_dim):
            raise ValueError(f"actions must have shape (B, {self.horizon}, {self.act_dim}), got {tuple(a.shape)}")
        if not torch.isfinite(a).all():
            raise ValueError("actions contain NaN or inf")
        return a

    def loss(self, obs, actions, generator=None) -> torch.Tensor:
        """Denoising loss (ε or v target, ``prediction_type``) on a batch: ``obs (B, obs_dim)``, ``actions (B, H, act_dim)`` (env units)."""
        o = check_obs(obs, self.obs_dim).to(self.obs_mean.device)
        a = self._check_actions(actions).to(o.device)
        if len(a) != len(o):
            raise ValueError(f"obs and actions must have the same batch size, got {len(o)} and {len(a)}")
        x0 = self.norm_act(a).clamp(-1, 1).flatten(1)
        t = torch.randint(0, self.train_steps, (len(x0),), generator=generator).to(o.device)
        noise = torch.randn(x0.shape, generator=generator).to(o.device)
        xt = self.ddpm.add_noise(x0, noise, t)
        target = noise if self.prediction_type == "epsilon" else self.ddpm.get_velocity(x0, noise, t)
        return ((self.eps(xt, t, self.norm_obs(o)) - target) ** 2).mean()

    def _denoise(self, x: torch.Tensor, obs_n: torch.Tensor, timesteps) -> torch.Tensor:
        for t in timesteps:
            tt = torch.full((len(x),), int(t), device=x.device, dtype=torch.long)
            x = self.ddim.step(self.eps(x, tt, obs_n), int(t), x).prev_sample
        return x

    def _expand(self, obs, n: int):
        o = check_obs(obs, self.obs_dim).to(self.obs_mean.device)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        return o, self.norm_obs(o).repeat_interleave(int(n), 0)

    @torch.no_grad()
    def sample(self, obs, n: int, generator=None) -> torch.Tensor:
        """``n`` chunks per observation: ``(obs_dim,) → (n, H, A)``; ``(B, obs_dim) → (B, n, H, A)``."""
        o, obs_n = self._expand(obs, n)
        x = torch.randn((len(obs_n), self.horizon * self.act_dim), generator=generator).to(o.device)
        x = self._denoise(x, obs_n, self.ddim.timesteps)
        out = self.unnorm_act(x.view(len(o), n, self.horizon, self.act_dim))
        return out[0] if np.ndim(obs) == 1 else out

    @torch.no_grad()
    def renoise(self, obs, actions: torch.Tensor, *, start: int = 3, generator=None) -> torch.Tensor:
        """Partially re-noise chunks and denoise them: the GTP refinement step.

        ``actions (B, n, H, A)`` are taken to DDIM timestep ``timesteps[start]`` (of the
        ``sample_steps`` ones) by the forward process and denoised by the remaining DDIM steps.
        ``start = 0`` is a fresh sample; larger ``start`` stays closer to the input.
        """
        if not 0 <= start < self.sample_steps:
            raise ValueError(f"start must be in [0, {self.sample_steps}), got {start}")
        o = check_obs(obs, self.obs_dim).to(self.obs_mean.device)
        B, n = actions.shape[:2]
        obs_n = self.norm_obs(o).repeat_interleave(n, 0)
        x0 = self.norm_act(actions.to(o.device)).clamp(-1, 1).reshape(B * n, -1)
        ts = self.ddim.timesteps[start:]
        noise = torch.randn(x0.shape, generator=generator).to(x0.device)
        x = self.ddpm.add_noise(x0, noise, torch.full((len(x0),), int(ts[0]), dtype=torch.long, device=x0.device))
        x = self._denoise(x, obs_n, ts)
        return self.unnorm_act(x.view(B, n, self.horizon, self.act_dim))

    def fit(self, obs, chunks, *, steps: int = 3000, batch_size: int = 256, lr: float = 1e-3,
            generator=None) -> list[float]:
        """Train on ``obs (N, obs_dim)`` and action chunks ``(N, H, A)``; returns the loss every 100 steps."""
        o = torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=self.obs_mean.device)
        c = self._check_actions(np.asarray(chunks)).to(o.device)
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(steps, 1))
        losses = []
        for it in range(steps):
            idx = torch.randint(0, len(o), (min(batch_size, len(o)),), generator=generator).to(o.device)
            loss = self.loss(o[idx], c[idx], generator=generator)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if not math.isfinite(loss.item()):
                raise FloatingPointError(f"prior training diverged at step {it} (loss {loss.item()})")
            if it % 100 == 0:
                losses.append(loss.item())
        return losses
