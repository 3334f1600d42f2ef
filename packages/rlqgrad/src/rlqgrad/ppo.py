"""Meta-training π_φ with PPO (CleanRL's continuous-action PPO, in one file), then freezing it.

The environment (inferred from the abstract): an episode trains one QNN task from uniform random angles
for ``horizon`` steps. Each step applies the sampled Δθ and evaluates the circuit once on a fresh
32-sample minibatch; that evaluation is the reward ``r = −10·Δloss`` (scaled) and the next observation.
``num_envs`` random initialisations of one task run side by side (one batched simulator call per step);
each rollout draws its task at random, so a coordinate-wise policy sees every circuit size.
Meta-training's evaluations go to their own :class:`~rlqgrad.EvalLedger` (``name="meta"``).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from paperworks import check_int
from rlqgrad.circuit import QNNCost
from rlqgrad.gradients import EvalLedger
from rlqgrad.policy import UpdatePolicy


class _Envs:
    """``num_envs`` parallel training episodes of one task (one batched evaluation per step)."""

    def __init__(self, task: QNNCost, num_envs: int, horizon: int, batch: int, rng: np.random.Generator,
                 ledger: EvalLedger):
        self.task, self.N, self.H, self.batch, self.rng, self.ledger = task, num_envs, horizon, batch, rng, ledger
        self.P = task.n_params
        self.reset_all()

    def _eval(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = self.rng.choice(self.task.X.shape[0], size=min(self.batch, self.task.X.shape[0]), replace=False)
        X, y = self.task.X[idx], self.task.y[idx]
        with torch.no_grad():
            f = self.task.hea.expval(torch.as_tensor(theta), X)  # (N, B)
        self.ledger.record(theta.shape[0])
        loss = ((1 - f * y) / 2).mean(-1).numpy()
        acc = (torch.sign(f) == y).double().mean(-1).numpy()
        return loss, acc

    def reset_all(self):
        self.theta = self.rng.uniform(0, 2 * np.pi, size=(self.N, self.P))
        self.loss, self.acc = self._eval(self.theta)
        self.dtheta = np.zeros_like(self.theta)
        self.dloss = np.zeros(self.N)
        self.t = np.zeros(self.N, dtype=int)

    def obs(self, policy: UpdatePolicy) -> torch.Tensor:
        return policy.observe_batch(self.theta, self.loss, self.acc, self.dtheta, self.dloss)

    def step(self, action: np.ndarray):
        self.theta = self.theta + action
        loss, acc = self._eval(self.theta)
        self.dloss = loss - self.loss
        reward = -10.0 * self.dloss
        self.loss, self.acc, self.dtheta = loss, acc, action
        self.t += 1
        done = self.t >= self.H
        if done.any():  # all envs share the clock: reset them together
            self.reset_all()
        return reward, done


def meta_train(policy: UpdatePolicy, tasks, *, total_steps: int, num_envs: int = 8, num_steps: int = 32,
               horizon: int = 64, batch: int = 32, lr: float = 3e-4, gamma: float = 0.99, gae_lambda: float = 0.95,
               update_epochs: int = 4, num_minibatches: int = 4, clip_coef: float = 0.2, ent_coef: float = 0.0,
               vf_coef: float = 0.5, max_grad_norm: float = 0.5, seed: int = 0, freeze: bool = True) -> dict:
    """Meta-train ``policy`` by PPO over random initialisations of ``tasks``; returns a log dict.

    Args:
        policy: an :class:`UpdatePolicy` (trained in place, frozen at the end when ``freeze``).
        tasks: :class:`QNNCost` s (``HEA(n, L).cost(X_train, y_train)``); a non-coordinate-wise policy
            needs every task to have its ``n_params``.
        total_steps: environment steps in all (each = one circuit evaluation per environment... counted
            per environment: ``total_steps`` evaluations plus one per reset).

    Returns:
        ``{"ledger": EvalLedger("meta"), "wall_s": ..., "rollout_loss_drop": [...], "updates": int}``.
    """
    total_steps = check_int(total_steps, "total_steps", minimum=1)
    if not isinstance(policy, UpdatePolicy):
        raise TypeError(f"policy must be an UpdatePolicy, got {type(policy).__name__}")
    tasks = list(tasks)
    if not tasks or not all(isinstance(t, QNNCost) for t in tasks):
        raise TypeError("tasks must be a non-empty sequence of QNNCost (HEA(...).cost(X, y))")
    for t in tasks:
        policy.check_size(t.n_params)
    if policy.frozen:
        raise ValueError("the policy is frozen (deployed); meta-train a fresh UpdatePolicy")
    # seeding
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    ledger = EvalLedger("meta")
    opt = torch.optim.Adam(policy.parameters(), lr=lr, eps=1e-5)
    batch_size = num_envs * num_steps
    mb = max(1, batch_size // num_minibatches)
    n_updates = max(1, total_steps // batch_size)
    returns_log, t0 = [], time.perf_counter()
    for update in range(n_updates):
        # a new task every rollout (fresh episodes)
        envs = _Envs(tasks[rng.integers(len(tasks))], num_envs, horizon, batch, rng, ledger)
        for g in opt.param_groups:  # CleanRL's linear annealing
            g["lr"] = lr * (1.0 - update / n_updates)
        obs_buf, act_buf, logp_buf, rew_buf, done_buf, val_buf = [], [], [], [], [], []
        # rollout
        policy.train()
        obs = envs.obs(policy)
        for _ in range(num_steps):
            with torch.no_grad():
                mean, std = policy.dist_params(obs)
                dist = torch.distributions.Normal(mean, std)
                act = dist.sample()
                logp = dist.log_prob(act).sum(-1)
                val = policy.value(obs)
            reward, done = envs.step(act.double().numpy())
            obs_buf.append(obs)
            act_buf.append(act)
            logp_buf.append(logp)
            val_buf.append(val)
            rew_buf.append(torch.as_tensor(reward, dtype=torch.float32))
            done_buf.append(torch.as_tensor(done, dtype=torch.float32))
            obs = envs.obs(policy)
        returns_log.append(float(torch.stack(rew_buf).sum(0).mean()) / 10.0)  # mean loss drop per episode
        # GAE
        with torch.no_grad():
            next_val = policy.value(obs)
            adv = torch.zeros(num_steps, num_envs)
            last = torch.zeros(num_envs)
            for t in reversed(range(num_steps)):
                nonterm = 1.0 - done_buf[t]
                nv = next_val if t == num_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + gamma * nv * nonterm - val_buf[t]
                last = delta + gamma * gae_lambda * nonterm * last
                adv[t] = last
            ret = adv + torch.stack(val_buf)
        b_obs = torch.stack(obs_buf).reshape(batch_size, *obs.shape[1:])
        b_act = torch.stack(act_buf).reshape(batch_size, -1)
        b_logp, b_adv, b_ret = torch.stack(logp_buf).reshape(-1), adv.reshape(-1), ret.reshape(-1)
        # PPO update
        for _ in range(update_epochs):
            perm = torch.randperm(batch_size)
            for s in range(0, batch_size, mb):
                i = perm[s:s + mb]
                mean, std = policy.dist_params(b_obs[i])
                dist = torch.distributions.Normal(mean, std)
                newlogp = dist.log_prob(b_act[i]).sum(-1)
                ratio = torch.exp(newlogp - b_logp[i])
                a = b_adv[i]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)).mean()
                v_loss = 0.5 * ((policy.value(b_obs[i]) - b_ret[i]) ** 2).mean()
                ent = dist.entropy().sum(-1).mean()
                loss = pg - ent_coef * ent + vf_coef * v_loss
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
                opt.step()
    wall = time.perf_counter() - t0
    ledger.wall_s = wall
    if freeze:
        policy.freeze()
    return {"ledger": ledger, "wall_s": wall, "rollout_loss_drop": returns_log, "updates": n_updates}
