"""GTP and the baseline planners; all share one interface and see only learned models.

``plan(obs) -> (chunk, diagnostics)``, ``act(obs) -> action``, ``reset()``; ``obs`` is
``(obs_dim,)`` or a batch ``(B, obs_dim)`` from vectorised environments. A planner holds the
models and nothing else: it never receives or steps an environment.

Every scoring planner evaluates a candidate chunk a_{0:H} on the **learned** model only,

    J(a) = Σ_{k<H} γ^k r̂(ŝ_k, a_k) + γ^H V̂(ŝ_H),   ŝ_{k+1} = mean_e f_e(ŝ_k, a_k),  ŝ_0 = s,

and spends ``iterations × n_samples`` rollouts per step (equal budgets across planners).

GTP (inferred from the abstract; the paper's refinement and scoring details are not public):
round 0 samples N chunks from the diffusion prior (one of them the warm start, the previous best
chunk shifted by one step); each further round takes the top-k elites, re-noises them to DDIM step
``renoise_start`` and denoises them (``refine="renoise"``), and/or takes ``grad_steps`` gradient
steps on the actions through the learned model (``"gradient"``; ``"both"`` does both); the first
action of the best chunk found is executed. ``refine=None`` spends the same budget on fresh prior
samples.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from gtp.models import DynamicsEnsemble, RewardModel, ValueFunction, check_obs
from gtp.prior import DiffusionPrior

REFINE = ("renoise", "gradient", "both", None)


def _pos_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    return int(v)


def _unit(name: str, v, lo: float = 0.0, hi: float = 1.0, *, closed_hi: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if not (lo <= v <= hi if closed_hi else lo <= v < hi):
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {v}")
    return float(v)


class Planner:
    """Shared machinery: validation, warm start, ``act``, timing diagnostics."""

    def __init__(self, obs_dim: int, act_dim: int, horizon: int, act_low: torch.Tensor, act_high: torch.Tensor):
        self.obs_dim, self.act_dim, self.horizon = obs_dim, act_dim, _pos_int("horizon", horizon)
        self.act_low, self.act_high = act_low.detach().clone(), act_high.detach().clone()
        self._prev: torch.Tensor | None = None
        self.generator = torch.Generator().manual_seed(0)

    @property
    def device(self) -> torch.device:
        """The models' device (plans are computed there; noise is drawn on the CPU generator)."""
        return self.act_low.device

    def reset(self) -> None:
        """Forget the warm start (call at the start of each episode)."""
        self._prev = None

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(int(seed))

    def _warm(self, B: int) -> torch.Tensor | None:
        if self._prev is None or len(self._prev) != B:
            return None
        return torch.cat([self._prev[:, 1:], self._prev[:, -1:]], 1)

    def _plan(self, obs: torch.Tensor) -> tuple[torch.Tensor, dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    def plan(self, obs) -> tuple[np.ndarray, dict]:
        """The chunk to execute ``(H, A)`` (or ``(B, H, A)``) and a dict of diagnostics."""
        o = check_obs(obs, self.obs_dim).to(self.act_low.device)
        t0 = time.perf_counter()
        chunk, diag = self._plan(o)
        self._prev = chunk.detach()
        diag["plan_ms"] = 1e3 * (time.perf_counter() - t0)
        out = chunk.detach().cpu().numpy().astype(np.float32)
        return (out[0] if np.ndim(obs) == 1 else out), diag

    def act(self, obs) -> np.ndarray:
        """The first action of the planned chunk: ``(A,)`` or ``(B, A)``."""
        chunk, _ = self.plan(obs)
        return chunk[..., 0, :]

    def _clip(self, a: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(a, self.act_high), self.act_low)


class ModelPlanner(Planner):
    """A planner that scores chunks on the learned models (ensemble mean) with a terminal value."""

    def __init__(self, dynamics: DynamicsEnsemble, reward: RewardModel, value: ValueFunction | None, *,
                 n_samples: int = 64, horizon: int = 16, gamma: float = 0.99, iterations: int = 3):
        for name, m, cls in (("dynamics", dynamics, DynamicsEnsemble), ("reward", reward, RewardModel)):
            if not isinstance(m, cls):
                raise TypeError(f"{name} must be a {cls.__name__}, got {type(m).__name__}")
        if value is not None and not isinstance(value, ValueFunction):
            raise TypeError(f"value must be a ValueFunction or None, got {type(value).__name__}")
        super().__init__(dynamics.obs_dim, dynamics.act_dim, horizon, dynamics.act_low, dynamics.act_high)
        self.dynamics, self.reward, self.value = dynamics, reward, value
        self.n_samples = _pos_int("n_samples", n_samples)
        self.iterations = _pos_int("iterations", iterations)
        self.gamma = _unit("gamma", gamma)

    def score(self, obs: torch.Tensor, chunks: torch.Tensor) -> torch.Tensor:
        """J of chunks ``(B, M, H, A)`` from states ``(B, d)`` → ``(B, M)`` (differentiable in the actions)."""
        B, M, H, _ = chunks.shape
        s = obs.repeat_interleave(M, 0)
        a = chunks.reshape(B * M, H, -1)
        total, disc = torch.zeros(B * M, device=obs.device), 1.0
        for k in range(H):
            total = total + disc * self.reward(s, a[:, k])
            s = self.dynamics.step(s, a[:, k])
            disc *= self.gamma
        if self.value is not None:
            total = total + disc * self.value(s)
        return total.view(B, M)


class GTPPlanner(ModelPlanner):
    """Generative Trajectory Planning: diffusion-prior proposals, refined and scored on learned models.

    Args:
        prior: a trained :class:`~gtp.DiffusionPrior` (its horizon is the planning horizon).
        dynamics, reward, value: the learned models (value may be None: no terminal value).
        n_samples: N chunks per round. refine: "renoise" | "gradient" | "both" | None.
        gamma: discount. iterations: rounds (1 sampling + iterations − 1 refinement).
        elite_frac: share of N kept as elites. renoise_start: DDIM step the elites are re-noised to.
        grad_steps, grad_lr: gradient refinement (Adam on the actions, in units of the half-range).
        warm_start: put the previous best chunk, shifted, among the candidates.
    """

    def __init__(self, prior: DiffusionPrior, dynamics: DynamicsEnsemble, reward: RewardModel,
                 value: ValueFunction | None, *, n_samples: int = 64, refine: str | None = "renoise",
                 gamma: float = 0.99, iterations: int = 3, elite_frac: float = 0.125, renoise_start: int = 3,
                 grad_steps: int = 2, grad_lr: float = 0.1, warm_start: bool = True):
        if not isinstance(prior, DiffusionPrior):
            raise TypeError(f"prior must be a DiffusionPrior, got {type(prior).__name__}")
        if refine not in REFINE:
            raise ValueError(f"refine must be one of {REFINE}, got {refine!r}")
        if prior.obs_dim != dynamics.obs_dim or prior.act_dim != dynamics.act_dim:
            raise ValueError("prior and dynamics disagree on obs_dim/act_dim")
        super().__init__(dynamics, reward, value, n_samples=n_samples, horizon=prior.horizon, gamma=gamma,
                         iterations=iterations)
        self.prior, self.refine = prior, refine
        self.elite_frac = _unit("elite_frac", elite_frac)
        if not 0 <= renoise_start < prior.sample_steps:
            raise ValueError(f"renoise_start must be in [0, {prior.sample_steps}), got {renoise_start}")
        self.renoise_start, self.grad_steps = int(renoise_start), int(grad_steps)
        self.grad_lr, self.warm_start = _unit("grad_lr", grad_lr, 0.0, 10.0), bool(warm_start)

    def _gradient(self, obs: torch.Tensor, chunks: torch.Tensor) -> torch.Tensor:
        half = (self.act_high - self.act_low) / 2
        z = (chunks / half).detach().requires_grad_(True)
        opt = torch.optim.Adam([z], lr=self.grad_lr)
        for _ in range(self.grad_steps):
            loss = -self.score(obs, self._clip(z * half)).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return self._clip(z.detach() * half)

    @torch.no_grad()
    def _plan(self, obs):
        B, N = len(obs), self.n_samples
        cand = self.prior.sample(obs, N, generator=self.generator)
        warm = self._warm(B) if self.warm_start else None
        if warm is not None:
            cand[:, 0] = warm
        scores = self.score(obs, cand)
        best_c, best_s = cand, scores
        k = max(1, int(round(self.elite_frac * N)))
        for _ in range(self.iterations - 1):
            if self.refine is None:
                cand = self.prior.sample(obs, N, generator=self.generator)
            else:
                top = best_s.topk(k, dim=1).indices
                elites = torch.gather(best_c, 1, top[..., None, None].expand(-1, -1, *best_c.shape[2:]))
                cand = elites.repeat_interleave(-(-N // k), 1)[:, :N]
                if self.refine in ("renoise", "both"):
                    cand = self.prior.renoise(obs, cand, start=self.renoise_start, generator=self.generator)
                if self.refine in ("gradient", "both"):
                    with torch.enable_grad():
                        cand = self._gradient(obs, cand)
            scores = self.score(obs, cand)
            best_c, best_s = torch.cat([best_c, cand], 1), torch.cat([best_s, scores], 1)
        i = best_s.argmax(1)
        chunk = best_c[torch.arange(B, device=obs.device), i]
        return chunk, {"score": best_s.max(1).values.cpu().numpy(), "rollouts": best_c.shape[1]}


class MPPIPlanner(ModelPlanner):
    """Gaussian MPPI: ``iterations`` rounds of N Gaussian chunks around a mean, exponentially weighted.

    w_i ∝ exp((J_i − max J) / (λ · std J)) (a temperature relative to the spread of the scores), then
    μ ← Σ w_i a_i and σ ← sqrt(Σ w_i (a_i − μ)²) ≥ σ_min. The mean is warm-started from the previous
    step's (shifted) and the first action of the final mean is executed.
    """

    def __init__(self, dynamics, reward, value, *, n_samples: int = 64, horizon: int = 16, gamma: float = 0.99,
                 iterations: int = 3, sigma: float = 0.5, temperature: float = 0.5, min_sigma: float = 0.05):
        super().__init__(dynamics, reward, value, n_samples=n_samples, horizon=horizon, gamma=gamma,
                         iterations=iterations)
        self.sigma = _unit("sigma", sigma, 1e-6, 10.0)
        self.temperature = _unit("temperature", temperature, 1e-6, 1e6)
        self.min_sigma = _unit("min_sigma", min_sigma, 0.0, 10.0)

    def _init(self, B):
        half, mid = (self.act_high - self.act_low) / 2, (self.act_high + self.act_low) / 2
        warm = self._warm(B)
        mu = warm if warm is not None else mid.expand(B, self.horizon, self.act_dim).clone()
        return mu, (self.sigma * half).expand(B, self.horizon, self.act_dim).clone(), half

    def _update(self, cand, scores, mu, sd, half):
        z = (scores - scores.max(1, keepdim=True).values) / (
            self.temperature * scores.std(1, keepdim=True).clamp_min(1e-8))
        w = torch.softmax(z, 1)[..., None, None]
        mu = (w * cand).sum(1)
        sd = ((w * (cand - mu[:, None]) ** 2).sum(1)).sqrt().clamp_min(self.min_sigma) * torch.ones_like(half)
        return mu, sd

    @torch.no_grad()
    def _plan(self, obs):
        B, N = len(obs), self.n_samples
        mu, sd, half = self._init(B)
        best = None
        for _ in range(self.iterations):
            eps = torch.randn((B, N, self.horizon, self.act_dim), generator=self.generator).to(obs.device)
            cand = self._clip(mu[:, None] + sd[:, None] * eps)
            cand[:, 0] = mu
            scores = self.score(obs, cand)
            best = scores.max(1).values if best is None else torch.maximum(best, scores.max(1).values)
            mu, sd = self._update(cand, scores, mu, sd, half)
        return self._clip(mu), {"score": best.cpu().numpy(), "rollouts": N * self.iterations}


class CEMPlanner(MPPIPlanner):
    """Cross-entropy method: the mean and std of the top ``elite_frac`` of N Gaussian chunks, ``iterations`` rounds."""

    def __init__(self, dynamics, reward, value, *, n_samples: int = 64, horizon: int = 16, gamma: float = 0.99,
                 iterations: int = 3, sigma: float = 0.5, elite_frac: float = 0.125, min_sigma: float = 0.05):
        super().__init__(dynamics, reward, value, n_samples=n_samples, horizon=horizon, gamma=gamma,
                         iterations=iterations, sigma=sigma, min_sigma=min_sigma)
        self.elite_frac = _unit("elite_frac", elite_frac)

    def _update(self, cand, scores, mu, sd, half):
        k = max(2, int(round(self.elite_frac * cand.shape[1])))
        k = min(k, cand.shape[1])
        top = scores.topk(k, dim=1).indices
        el = torch.gather(cand, 1, top[..., None, None].expand(-1, -1, *cand.shape[2:]))
        return el.mean(1), el.std(1).clamp_min(self.min_sigma)


class RandomShootingPlanner(ModelPlanner):
    """Random shooting: ``iterations × N`` uniform random chunks; the best one's first action."""

    @torch.no_grad()
    def _plan(self, obs):
        B, N = len(obs), self.n_samples
        best_c, best_s = None, None
        for _ in range(self.iterations):
            u = torch.rand((B, N, self.horizon, self.act_dim), generator=self.generator).to(obs.device)
            cand = self.act_low + u * (self.act_high - self.act_low)
            s = self.score(obs, cand)
            i = s.argmax(1)
            c, v = cand[torch.arange(B, device=obs.device), i], s.max(1).values
            if best_c is None:
                best_c, best_s = c, v
            else:
                better = (v > best_s)[:, None, None]
                best_c, best_s = torch.where(better, c, best_c), torch.maximum(v, best_s)
        return best_c, {"score": best_s.cpu().numpy(), "rollouts": N * self.iterations}


class PriorPolicy(Planner):
    """The diffusion policy: one chunk from the prior, no scoring (``n_samples`` is ignored beyond 1)."""

    def __init__(self, prior: DiffusionPrior, *, n_samples: int = 1):
        if not isinstance(prior, DiffusionPrior):
            raise TypeError(f"prior must be a DiffusionPrior, got {type(prior).__name__}")
        super().__init__(prior.obs_dim, prior.act_dim, prior.horizon, prior.act_low, prior.act_high)
        self.prior, self.n_samples = prior, _pos_int("n_samples", n_samples)

    @torch.no_grad()
    def _plan(self, obs):
        return self.prior.sample(obs, 1, generator=self.generator)[:, 0], {"rollouts": 0}
