"""Model-free baselines: TD3+BC trained offline on the same transitions (ours; stable-baselines3
has no offline TD3+BC), and stable-baselines3 SAC as an online reference (optional extra ``sb3``).

TD3+BC (Fujimoto & Gu 2021): TD3 with the actor loss  −λ Q(s, π(s)) / mean|Q| + ‖π(s) − a‖²,
λ = 2.5, target policy smoothing and delayed actor updates; observations normalised.
"""

from __future__ import annotations

import copy
import logging

import numpy as np
import torch
from torch import nn

from gtp.data import load_dataset
from gtp.models import Normalised, mlp
from gtp.planners import Planner

log = logging.getLogger(__name__)


class TD3BC(Planner):
    """TD3+BC actor/critics with the planners' interface (``plan`` returns a one-step chunk)."""

    def __init__(self, obs_dim: int, act_dim: int, *, hidden: int = 256, act_low=None, act_high=None):
        self.norm = Normalised(obs_dim, act_dim)
        if act_low is not None:
            self.norm.set_stats(np.zeros((2, obs_dim)), act_low, act_high)
        super().__init__(obs_dim, act_dim, 1, self.norm.act_low, self.norm.act_high)
        self.actor = nn.Sequential(mlp(obs_dim, hidden, act_dim), nn.Tanh())
        self.q1, self.q2 = mlp(obs_dim + act_dim, hidden, 1), mlp(obs_dim + act_dim, hidden, 1)

    def pi(self, obs: torch.Tensor) -> torch.Tensor:
        """Actions in [-1, 1] (normalised units)."""
        return self.actor(self.norm.norm_obs(obs))

    def _q(self, net, obs, a_n):
        return net(torch.cat([self.norm.norm_obs(obs), a_n], -1)).squeeze(-1)

    @torch.no_grad()
    def _plan(self, obs):
        return self.norm.unnorm_act(self.pi(obs))[:, None], {"rollouts": 0}

    def fit(self, dataset, *, steps: int = 5000, batch_size: int = 256, gamma: float = 0.99, lr: float = 3e-4,
            alpha: float = 2.5, tau: float = 0.005, policy_noise: float = 0.2, noise_clip: float = 0.5,
            policy_freq: int = 2, seed: int = 0) -> dict:
        d = load_dataset(dataset)
        g = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        o, o2 = torch.as_tensor(d["observations"]), torch.as_tensor(d["next_observations"])
        act = d["actions"]
        self.norm.set_stats(d["observations"], act.min(0), np.maximum(act.max(0), act.min(0) + 1e-3))
        self.act_low, self.act_high = self.norm.act_low.clone(), self.norm.act_high.clone()
        a = self.norm.norm_act(torch.as_tensor(act)).clamp(-1, 1)
        r = torch.as_tensor(d["rewards"])
        r = (r - r.mean()) / r.std().clamp_min(1e-6)  # scale-free critic targets
        done = torch.as_tensor(d["terminals"].astype(np.float32))
        actor_t, q1_t, q2_t = (copy.deepcopy(m).requires_grad_(False) for m in (self.actor, self.q1, self.q2))
        opt_a = torch.optim.Adam(self.actor.parameters(), lr=lr)
        opt_q = torch.optim.Adam([*self.q1.parameters(), *self.q2.parameters()], lr=lr)
        n, hist = len(o), []
        for it in range(steps):
            idx = torch.randint(0, n, (min(batch_size, n),), generator=g)
            s, u, s2 = o[idx], a[idx], o2[idx]
            with torch.no_grad():
                noise = (torch.randn(u.shape, generator=g) * policy_noise).clamp(-noise_clip, noise_clip)
                u2 = (actor_t(self.norm.norm_obs(s2)) + noise).clamp(-1, 1)
                q_next = torch.minimum(self._q(q1_t, s2, u2), self._q(q2_t, s2, u2))
                y = r[idx] + gamma * (1 - done[idx]) * q_next
            lq = ((self._q(self.q1, s, u) - y) ** 2).mean() + ((self._q(self.q2, s, u) - y) ** 2).mean()
            opt_q.zero_grad(set_to_none=True)
            lq.backward()
            opt_q.step()
            if it % policy_freq == 0:
                pa = self.pi(s)
                q = self._q(self.q1, s, pa)
                la = -alpha * q.mean() / q.abs().mean().detach().clamp_min(1e-6) + ((pa - u) ** 2).mean()
                opt_a.zero_grad(set_to_none=True)
                la.backward()
                opt_a.step()
                with torch.no_grad():
                    for net, tgt in ((self.actor, actor_t), (self.q1, q1_t), (self.q2, q2_t)):
                        for p, pt in zip(net.parameters(), tgt.parameters()):
                            pt.lerp_(p, tau)
            if not torch.isfinite(lq):
                raise FloatingPointError(f"TD3+BC diverged at step {it}")
            if it % 500 == 0:
                hist.append(lq.item())
        return {"critic_loss": hist}


def sac_reference(env_id: str, *, steps: int = 5000, seed: int = 0):
    """stable-baselines3 SAC trained online for ``steps`` environment steps; None when sb3 is missing.

    Returns a planner-like object with ``act``/``plan``/``reset`` (deterministic actions).
    """
    try:
        from stable_baselines3 import SAC
    except ImportError:
        log.warning("stable-baselines3 is not installed (pip install 'paperworks-gtp[sb3]'): no SAC reference")
        return None
    import gymnasium as gym

    model = SAC("MlpPolicy", gym.make(env_id), seed=seed, learning_starts=min(1000, steps // 2), verbose=0,
                device="cpu", policy_kwargs={"net_arch": [128, 128]})
    model.learn(total_timesteps=int(steps), progress_bar=False)
    return SB3Policy(model)


class SB3Policy:
    """A stable-baselines3 model behind the planners' ``act``/``plan``/``reset``."""

    def __init__(self, model):
        self.model = model

    def reset(self) -> None:
        pass

    def seed(self, seed: int) -> None:
        pass

    def plan(self, obs):
        a, _ = self.model.predict(np.asarray(obs, dtype=np.float32), deterministic=True)
        return np.asarray(a, np.float32)[..., None, :], {"rollouts": 0}

    def act(self, obs):
        return self.plan(obs)[0][..., 0, :]
