"""Training (checkpoints, resume, data-parallel under ``torchrun``), closed-loop evaluation and probes."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from latentwam.data import Demos
from latentwam.wam import ChunkPolicy, _float, _int
from paperworks import atomic_torch_save

log = logging.getLogger("latentwam")


# distributed --------------------------------------------------------------------------------------

def _dist():
    """(rank, world size); initialises the process group when launched by torchrun and not yet done."""
    import torch.distributed as dist

    if dist.is_available() and not dist.is_initialized() and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _all_reduce_grads(model, world):
    import torch.distributed as dist

    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world


# training -----------------------------------------------------------------------------------------

def train(model: ChunkPolicy, dataset: Demos, *, steps: int, batch_size: int = 64, lr: float = 1e-3,
          weight_decay: float = 1e-4, seed: int = 0, checkpoint=None, checkpoint_every: int = 0,
          resume: bool = False, track: Callable | None = None, track_every: int = 0,
          progress: bool = False) -> list[dict]:
    """Train ``model`` on ``dataset`` for ``steps`` AdamW steps; returns the per-step logs.

    Args:
        model: a :class:`LatentWAM`, :class:`VLAPolicy` or :class:`PixelWAM` (its ``loss(batch)``).
        dataset: a :class:`~latentwam.data.Demos` (from ``collect_demos`` or ``load_lerobot``).
        steps: total optimiser steps; batch_size: samples per step (per rank under torchrun).
        seed: seeds the batch sampler (and flow-matching noise); rank r uses ``seed + r``.
        checkpoint: file written every ``checkpoint_every`` steps and at the end (rank 0 only): weights,
            optimiser, sampler state, step and logs (``torch.load(weights_only=True)``).
        resume: continue from ``checkpoint`` (which must exist) to the same result as an unbroken run.
        track: ``track(step, model) -> dict`` called at step 0, every ``track_every`` steps and at the end;
            its values join that step's log (e.g. the latents' effective rank).

    Under ``torchrun`` (``WORLD_SIZE > 1``) every rank samples its own batches and the gradients are
    all-reduced (averaged) before each step: data-parallel training with identical replicas.

    Raises:
        FloatingPointError: the loss became NaN or inf (the message names the step).
    """
    steps = _int(steps, "steps")
    batch_size = _int(batch_size, "batch_size")
    lr = _float(lr, "lr")
    if lr == 0:
        raise ValueError("lr must be > 0")
    weight_decay = _float(weight_decay, "weight_decay")
    if not isinstance(dataset, Demos):
        raise TypeError(f"dataset must be a latentwam Demos, got {type(dataset).__name__}")
    if dataset.action_dim != model.action_dim or dataset.proprio_dim != model.proprio_dim:
        raise ValueError(f"dataset (action_dim {dataset.action_dim}, proprio_dim {dataset.proprio_dim}) does not "
                         f"match the model ({model.action_dim}, {model.proprio_dim})")
    if dataset.chunk != model.chunk:
        raise ValueError(f"dataset chunk {dataset.chunk} != model chunk {model.chunk}")
    offs = getattr(model, "future_offsets", None)
    if offs is not None and tuple(offs) != tuple(dataset.future_offsets):
        raise ValueError(f"dataset future_offsets {dataset.future_offsets} != model's {tuple(offs)}")
    rank, world = _dist()
    device = model.act_token.device
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(int(seed) + rank)
    history: list[dict] = []
    start = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if resume:
        if ckpt is None or not ckpt.is_file():
            raise FileNotFoundError(f"resume=True but there is no checkpoint at {ckpt}")
        blob = torch.load(ckpt, map_location=device, weights_only=True)
        model.load_state_dict(blob["model"])
        opt.load_state_dict(blob["optimizer"])
        gen.set_state(blob["sampler"])
        start, history = int(blob["step"]), list(blob["history"])
        if start > steps:
            raise ValueError(f"the checkpoint is at step {start}, past steps={steps}")
    model.train()
    n = len(dataset)
    it = range(start, steps)
    if track is not None and start == 0:
        history.append({"step": 0, **track(0, model)})
    for step in it:
        idx = torch.randint(0, n, (batch_size,), generator=gen).numpy()
        batch = {k: v.to(device) for k, v in dataset.batch(idx).items()}
        loss, logs = model.loss(batch, generator=gen)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training stopped: the loss became {float(loss.detach())} at step {step + 1}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if world > 1:
            _all_reduce_grads(model, world)
        opt.step()
        row = {"step": step + 1, **logs}
        if track is not None and track_every and (step + 1) % track_every == 0 or track is not None and step + 1 == steps:
            row.update(track(step + 1, model))
            model.train()
        history.append(row)
        if progress and rank == 0 and ((step + 1) % max(steps // 10, 1) == 0 or step + 1 == steps):
            log.info("%s step %d/%d loss %.4f", type(model).__name__, step + 1, steps, logs["loss"])
        if ckpt is not None and rank == 0 and (checkpoint_every and (step + 1) % checkpoint_every == 0
                                               or step + 1 == steps):
            _save_checkpoint(ckpt, model, opt, gen, step + 1, history)
    model.eval()
    return history


def _save_checkpoint(path: Path, model, opt, gen, step, history):
    atomic_torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(), "sampler": gen.get_state(),
                       "step": step, "history": history, "class": type(model).__name__, "config": model.config()}, path)


# closed-loop evaluation -----------------------------------------------------------------------------

SCRIPTED = ("expert", "chase", "random")


def evaluate(env_id: str, policy, episodes: int = 200, seed: int | None = None, *, exec_horizon: int = 4,
             max_steps: int = 30, batch_size: int = 256) -> dict:
    """Closed-loop success rate of ``policy`` over ``episodes`` episodes (batched across episodes).

    ``policy``: a trained model (its ``act``), one of ``"expert"``, ``"chase"``, ``"random"`` (scripted
    references on the true state), or a callable ``(frames uint8 (B, 2, 3, S, S), proprio (B, 2)) →
    chunk (B, K, 2)``. The first ``exec_horizon`` actions of each chunk are executed, then it replans.
    Episode ``i`` is seeded ``seed + i`` (``None``: 1,000,000 + i, disjoint from the demos' seeds).

    Returns ``{"success": rate, "successes": k, "episodes": n, "steps_to_success": mean}``.
    """
    from latentwam.envs import make

    episodes = _int(episodes, "episodes")
    exec_horizon = _int(exec_horizon, "exec_horizon")
    base = 1_000_000 if seed is None else int(seed)
    if isinstance(policy, str) and policy not in SCRIPTED:
        raise ValueError(f"policy must be a model, a callable or one of {SCRIPTED}, got {policy!r}")
    if not isinstance(policy, str) and not callable(policy):
        raise TypeError("policy must be a model, a callable or a scripted policy name")
    rng = np.random.default_rng(base)
    succ, when = 0, []
    for b0 in range(0, episodes, batch_size):
        envs = [make(env_id, max_steps=max_steps) for _ in range(min(batch_size, episodes - b0))]
        obs = [e.reset(seed=base + b0 + i)[0] for i, e in enumerate(envs)]
        done = np.zeros(len(envs), bool)
        t = 0
        while not done.all():
            live = np.flatnonzero(~done)
            chunk = _chunk(policy, [envs[i] for i in live], [obs[i] for i in live], rng)
            for k in range(min(exec_horizon, chunk.shape[1])):
                for j, i in enumerate(live):
                    if done[i]:
                        continue
                    a = chunk[j, k] if not isinstance(policy, str) or policy == "random" else _scripted(envs[i], policy)
                    obs[i], _, term, trunc, info = envs[i].step(a)
                    if term or trunc:
                        done[i] = True
                        if info["success"]:
                            succ += 1
                            when.append(envs[i].t)
                t += 1
    return {"success": succ / episodes, "successes": succ, "episodes": episodes,
            "steps_to_success": float(np.mean(when)) if when else math.nan}


def _scripted(env, name):
    return env.expert_action() if name == "expert" else env.chase_action()


def _chunk(policy, envs, obs, rng) -> np.ndarray:
    if isinstance(policy, str):
        if policy == "random":
            return rng.uniform(-1, 1, size=(len(envs), 8, 2)).astype(np.float32)
        return np.zeros((len(envs), 8, 2), np.float32)  # placeholder: scripted actions are computed per step
    frames = np.stack([o["frames"] for o in obs])
    proprio = np.stack([o["proprio"] for o in obs])
    if isinstance(policy, torch.nn.Module) and hasattr(policy, "act"):
        out = policy.act(torch.from_numpy(frames), torch.from_numpy(proprio)).cpu().numpy()
    else:
        out = np.asarray(policy(frames, proprio), dtype=np.float32)
    if out.ndim != 3 or out.shape[0] != len(envs) or out.shape[2] != 2:
        raise ValueError(f"the policy must return a chunk (B, K, 2), got shape {out.shape}")
    return np.clip(out, -1.0, 1.0)


# offline metrics ---------------------------------------------------------------------------------

@torch.no_grad()
def _outputs(model, dataset: Demos, which=None, batch_size: int = 512):
    model.eval()
    which = np.arange(len(dataset)) if which is None else np.asarray(which)
    feats, lat, mse = [], [], []
    dev = model.act_token.device
    for i in range(0, len(which), batch_size):
        b = dataset.batch(which[i:i + batch_size])
        out = model(b["frames"].to(dev), b["proprio"].to(dev))
        feats.append(out["features"].float().cpu())
        if out["latents_prior"] is not None:
            lat.append(out["latents_prior"].flatten(1).float().cpu())
        mse.append(((out["actions"].cpu() - b["actions"]) ** 2).mean((1, 2)))
    return (torch.cat(feats).numpy(), torch.cat(lat).numpy() if lat else None, torch.cat(mse).numpy())


def action_mse(model, dataset: Demos) -> float:
    """Held-out action MSE of the prior's chunk against the expert's (offline; beside success, never instead)."""
    return float(_outputs(model, dataset)[2].mean())


def latent_matrix(model, dataset: Demos, n: int = 1024, seed: int = 0) -> np.ndarray:
    """The prior latents (N, M·d) of ``n`` samples (for effective rank and variance)."""
    rng = np.random.default_rng(seed)
    which = rng.choice(len(dataset), size=min(n, len(dataset)), replace=False)
    _, lat, _ = _outputs(model, dataset, which)
    if lat is None:
        raise ValueError(f"{type(model).__name__} has no latents")
    return lat


def probe(model, dataset: Demos, target: str = "ball_future", *, train_frac: float = 0.7) -> float:
    """Held-out R² of a ridge probe (RidgeCV over α ∈ 10^[-3, 3]) from the model's features to a state.

    ``target``: ``"ball_future"`` (the ball at t + each future offset), ``"ball_now"`` (at t) or
    ``"effector"`` (at t). Features: a LatentWAM's prior latents (M·d), a VLA's pooled tokens (same width),
    a PixelWAM's frame-query outputs. The probe is fit on the first ``train_frac`` of the episodes and
    scored on the rest.
    """
    from sklearn.linear_model import RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    targets = {"ball_future": ("ball", getattr(model, "future_offsets", (4, 8))), "ball_now": ("ball", (0,)),
               "effector": ("effector", (0,))}
    if target not in targets:
        raise ValueError(f"target must be one of {sorted(targets)}, got {target!r}")
    name, offs = targets[target]
    y = dataset.targets(name, offs)
    feats, _, _ = _outputs(model, dataset)
    cut = int(round(train_frac * dataset.n_episodes))
    if not 0 < cut < dataset.n_episodes:
        raise ValueError("probe needs at least two episodes on each side of the split")
    tr = dataset.episode < cut
    reg = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
    reg.fit(feats[tr], y[tr])
    return float(r2_score(y[~tr], reg.predict(feats[~tr])))
