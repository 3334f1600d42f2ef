"""Per-token noise levels (diffusion forcing) and the ``diffusers`` DDPM noise path.

A *level* is an integer in ``{0, …, num_levels}``: level 0 is a clean token (its own level, since
``DDPMScheduler`` timestep 0 still adds noise), level ``k ≥ 1`` is scheduler timestep ``k − 1``::

    x̃ = x                          if k = 0
    x̃ = √ᾱ_{k−1} x + √(1−ᾱ_{k−1}) ε  otherwise   (DDPMScheduler.add_noise on the B·T frames)

Diffusion forcing (Chen et al., NeurIPS 2024) draws an independent level per token; teacher forcing
is the special case with a clean context and a noised next token. With a causal model the windows
ending at every position are trained in one pass: their targets get independent levels and their
context is clean, so in ``loss`` TF is DF with the context levels set to zero (one code path).
"""

from __future__ import annotations

import torch

OBJECTIVES = ("tf", "df", "df_tf")


def check_objective(objective) -> str:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return objective


def phase(objective: str, progress: float, switch: float = 0.7) -> str:
    """The objective in force at ``progress ∈ [0, 1]``: ``df_tf`` is DF before ``switch``, TF after."""
    check_objective(objective)
    if objective != "df_tf":
        return objective
    return "df" if progress < switch else "tf"


def sample_noise_levels(batch: int, frames: int, *, objective: str, num_levels: int = 1000,
                        generator: torch.Generator | None = None, progress: float = 0.0,
                        switch: float = 0.7) -> torch.Tensor:
    """Per-token noise levels, LongTensor ``[batch, frames]``.

    - ``df``: every token's level independently uniform on ``{1, …, num_levels}``.
    - ``tf``: clean context and a noised next frame: ``(0, …, 0, k)`` with ``k`` uniform on ``{1, …, num_levels}``.
    - ``df_tf``: ``df`` while ``progress < switch`` (0.7: the last 30 % of the steps are TF), then ``tf``.

    Example:
        >>> lv = sample_noise_levels(4, 6, objective="df", generator=torch.Generator().manual_seed(0))
        >>> lv.shape, lv.dtype
        (torch.Size([4, 6]), torch.int64)
    """
    for name, v in (("batch", batch), ("frames", frames), ("num_levels", num_levels)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    kind = phase(objective, float(progress), switch)
    if kind == "df":
        return torch.randint(1, num_levels + 1, (batch, frames), generator=generator)
    levels = torch.zeros(batch, frames, dtype=torch.long)
    levels[:, -1] = torch.randint(1, num_levels + 1, (batch,), generator=generator)
    return levels


class NoiseSchedule:
    """The DDPM noise path on per-token levels, through a ``diffusers.DDPMScheduler``."""

    def __init__(self, num_levels: int = 1000, beta_schedule: str = "squaredcos_cap_v2"):
        from diffusers import DDPMScheduler

        if isinstance(num_levels, bool) or not isinstance(num_levels, int) or num_levels < 2:
            raise ValueError(f"num_levels must be an int >= 2, got {num_levels!r}")
        self.num_levels = num_levels
        self.scheduler = DDPMScheduler(num_train_timesteps=num_levels, beta_schedule=beta_schedule)
        ab = self.scheduler.alphas_cumprod.to(torch.float64)
        self.alpha_bar = torch.cat([torch.ones(1, dtype=torch.float64), ab]).float()  # indexed by level

    def sigma(self, levels: torch.Tensor) -> torch.Tensor:
        """Noise standard deviation √(1−ᾱ) of each level (0 for clean tokens)."""
        return (1.0 - self.alpha_bar.to(levels.device)[levels]).clamp(min=0).sqrt()

    def level_of(self, fraction: float) -> int:
        """The level at ``fraction`` of the way to pure noise (the stabilisation level 0.02 → 20 of 1000)."""
        return int(round(float(fraction) * self.num_levels))

    def add_noise(self, x: torch.Tensor, levels: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Noise ``x`` ``(B, T, ...)`` at per-token ``levels`` ``(B, T)`` with ``noise`` (same shape as ``x``)."""
        if levels.shape != x.shape[:2]:
            raise ValueError(f"levels must have shape {tuple(x.shape[:2])}, got {tuple(levels.shape)}")
        flat_x, flat_n = x.flatten(0, 1), noise.flatten(0, 1)
        t = (levels.flatten() - 1).clamp(min=0)
        noisy = self.scheduler.add_noise(flat_x, flat_n, t.to(flat_x.device))
        keep = (levels.flatten() == 0).view(-1, *([1] * (x.dim() - 2)))
        return torch.where(keep, flat_x, noisy).view_as(x)

    def ddim_levels(self, steps: int) -> list[int]:
        """Decreasing levels ``num_levels = l_0 > … > l_K = 0`` for ``steps`` DDIM steps."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        lv = torch.linspace(self.num_levels, 0, steps + 1).round().long().tolist()
        return lv

    def ddim_step(self, x: torch.Tensor, x0: torch.Tensor, level: int, next_level: int) -> torch.Tensor:
        """Deterministic DDIM (η = 0) from ``level`` to ``next_level`` given the x₀ prediction."""
        a, b = self.alpha_bar[level].item(), self.alpha_bar[next_level].item()
        eps = (x - a ** 0.5 * x0) / max(1.0 - a, 1e-12) ** 0.5
        return b ** 0.5 * x0 + (1.0 - b) ** 0.5 * eps
