"""``fit_models``: train the prior, dynamics ensemble, reward and value on one dataset, and the
self-contained :class:`LearnedModels` bundle (one file, ``torch.load(weights_only=True)``)."""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gtp.data import action_chunks, load_dataset, n_step_targets
from gtp.models import DynamicsEnsemble, RewardModel, ValueFunction
from gtp.prior import DiffusionPrior
from paperworks import atomic_torch_save

log = logging.getLogger(__name__)


def _split(n: int, val_frac: float, g: torch.Generator):
    perm = torch.randperm(n, generator=g)
    k = max(1, int(val_frac * n)) if n > 10 else 0
    return perm[k:], perm[:k]


def fit_regression(model, inputs: tuple, target: torch.Tensor, loss_fn, *, steps: int, batch_size: int = 256,
                   lr: float = 1e-3, val_frac: float = 0.1, eval_every: int = 250, generator=None,
                   members: int | None = None) -> dict:
    """Minibatch Adam with early stopping: keeps the parameters of the best validation loss.

    ``members``: for an ensemble, each member draws its own minibatch (inputs become ``(E, B, ·)``).
    """
    g = generator or torch.Generator().manual_seed(0)
    n = len(target)
    tr, va = _split(n, val_frac, g)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best, best_state, hist = math.inf, None, []

    def batch(idx):
        return [x[idx] for x in inputs], target[idx]

    for it in range(steps + 1):
        if it % eval_every == 0 or it == steps:
            with torch.no_grad():
                ids = va if len(va) else tr[:1024]
                xs, y = batch(ids)
                vl = float(loss_fn(model(*xs), y))
            hist.append(vl)
            if vl < best:
                best, best_state = vl, copy.deepcopy(model.state_dict())
            if it == steps:
                break
        shape = (members, min(batch_size, len(tr))) if members else (min(batch_size, len(tr)),)
        idx = tr[torch.randint(0, len(tr), shape, generator=g)]
        xs, y = batch(idx)
        loss = loss_fn(model(*xs), y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training of {type(model).__name__} diverged at step {it}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.load_state_dict(best_state)
    return {"val_loss": best, "history": hist}


@dataclass
class LearnedModels:
    """The four learned pieces GTP plans with; ``save``/``load`` as one self-contained file."""

    prior: DiffusionPrior
    dynamics: DynamicsEnsemble
    reward: RewardModel
    value: ValueFunction
    info: dict

    def save(self, path) -> Path:
        path = Path(path)
        blob = {name: {"config": getattr(self, name).config(), "state": getattr(self, name).state_dict()}
                for name in ("prior", "dynamics", "reward", "value")}
        blob["info"] = {k: v for k, v in self.info.items() if isinstance(v, (int, float, str, bool))}
        atomic_torch_save(blob, path)
        return path

    @classmethod
    def load(cls, path) -> LearnedModels:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no saved models at {path}")
        blob = torch.load(path, weights_only=True, map_location="cpu")
        missing = [k for k in ("prior", "dynamics", "reward", "value") if k not in blob]
        if missing:
            raise ValueError(f"{path} is not a gtp models file (missing {missing})")
        mods = {}
        for name, klass in (("prior", DiffusionPrior), ("dynamics", DynamicsEnsemble), ("reward", RewardModel),
                            ("value", ValueFunction)):
            m = klass(**blob[name]["config"])
            m.load_state_dict(blob[name]["state"])
            mods[name] = m.eval()
        return cls(**mods, info=dict(blob.get("info", {})))

    def to(self, device) -> LearnedModels:
        for name in ("prior", "dynamics", "reward", "value"):
            getattr(self, name).to(device)
        return self


def fit_models(dataset, *, horizon: int = 16, prior_steps: int = 3000, model_steps: int = 2000,
               value_steps: int = 3000, gamma: float = 0.99, members: int = 5, hidden: int = 128,
               prior_hidden: int = 256, batch_size: int = 256, n_step: int = 16, act_low=None, act_high=None, seed: int = 0,
               device: str = "cpu") -> LearnedModels:
    """Train the diffusion prior, the dynamics ensemble, the reward MLP and the value (fitted TD).

    Args:
        dataset: a dict with D4RL's keys (``observations``, ``actions``, ``rewards``,
            ``next_observations``, ``terminals``; optional ``timeouts``) or an ``.npz`` path with them.
            Transitions with non-finite values are skipped and counted (``info["skipped"]``).
        horizon: the prior's chunk length H. *_steps: gradient steps of each learner.
        act_low, act_high: action bounds (default: the data's min and max).
        n_step: the value's TD targets are n-step returns within episodes (n = 1: one-step TD).
        seed: torch seed of initialisation and minibatches.
        device: "cpu", "cuda" or "auto" (CUDA when present); models are trained and returned there.

    Returns:
        :class:`LearnedModels` (every learner trained on the same transitions).
    """
    from paperworks import resolve_device

    dev = torch.device(resolve_device(str(device)))
    d = load_dataset(dataset)
    for name, v in (("prior_steps", prior_steps), ("model_steps", model_steps), ("value_steps", value_steps)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be an int >= 0, got {v!r}")
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    obs, act = d["observations"], d["actions"]
    obs_dim, act_dim = obs.shape[1], act.shape[1]
    low = act.min(0) if act_low is None else np.broadcast_to(np.asarray(act_low, np.float32), (act_dim,))
    high = act.max(0) if act_high is None else np.broadcast_to(np.asarray(act_high, np.float32), (act_dim,))
    high = np.maximum(high, low + 1e-3)
    o, a = torch.as_tensor(obs, device=dev), torch.as_tensor(np.clip(act, low, high), device=dev)
    o2, r = torch.as_tensor(d["next_observations"], device=dev), torch.as_tensor(d["rewards"], device=dev)

    dyn = DynamicsEnsemble(obs_dim, act_dim, members=members, hidden=hidden)
    dyn.set_stats(obs, low, high)
    dyn.to(dev)
    delta = o2 - o
    with torch.no_grad():
        dyn.delta_mean.copy_(delta.mean(0))
        dyn.delta_std.copy_(delta.std(0).clamp_min(1e-6))
    target_n = (delta - dyn.delta_mean) / dyn.delta_std

    class _DeltaFit(torch.nn.Module):  # the ensemble's output as a normalised state change
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, s, u):
            return (self.m(s, u) - s - self.m.delta_mean) / self.m.delta_std

    dyn_info = fit_regression(_DeltaFit(dyn), (o, a), target_n, lambda p, y: ((p - y) ** 2).mean(),
                              steps=model_steps, batch_size=batch_size, generator=g, members=members)

    rew = RewardModel(obs_dim, act_dim, hidden=hidden)
    rew.set_stats(obs, low, high)
    rew.to(dev)
    with torch.no_grad():
        rew.r_mean.copy_(r.mean())
        rew.r_std.copy_(r.std().clamp_min(1e-6))
    rew_info = fit_regression(rew, (o, a), r, lambda p, y: (((p - y) / rew.r_std) ** 2).mean(),
                              steps=model_steps, batch_size=batch_size, generator=g)

    val = ValueFunction(obs_dim, hidden=hidden).to(dev)
    ret, boot, disc = n_step_targets(d, gamma, n_step)
    val_hist = val.fit(obs, ret, boot, d["terminals"], gamma=gamma, steps=value_steps, discounts=disc,
                       batch_size=batch_size, generator=g)

    prior = DiffusionPrior(obs_dim, act_dim, horizon=horizon, hidden=prior_hidden)
    prior.set_stats(obs, low, high)
    prior.to(dev)
    chunks = action_chunks(d, horizon)
    prior_hist = prior.fit(obs, chunks, steps=prior_steps, batch_size=batch_size, generator=g)
    info = {"n_transitions": len(obs), "skipped": int(d["skipped"]), "dyn_val_loss": dyn_info["val_loss"],
            "reward_val_loss": rew_info["val_loss"], "value_td_loss": val_hist[-1] if val_hist else float("nan"),
            "prior_loss": prior_hist[-1] if prior_hist else float("nan"), "gamma": gamma}
    log.info("fitted models: %s", info)
    return LearnedModels(prior.eval(), dyn.eval(), rew.eval(), val.eval(), info)
