"""Training of the tiny video DiT: one process or ``torchrun`` (DDP), checkpointed and resumable.

The same entry point runs both ways::

    monarchrt-train --out runs/dit dit.steps=400                       # one process
    torchrun --standalone --nproc_per_node=2 -m monarchrt.train --out runs/dit dit.steps=400
    monarchrt-train --out runs/dit --resume dit.steps=800              # continue from the checkpoint

Overrides are keys of the package's Hydra config (``dit.*``, ``seed``). Data parallelism: every
rank draws the same *global* batch (indices, noise levels and noise) from one seeded generator and
keeps its own contiguous slice, and DDP averages the gradients — so the update is the one a
single process computes on the whole global batch (to float rounding), whatever the world size.
Rank 0 writes the checkpoint (atomically); every rank resumes from it.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from monarchrt.data import bouncing_squares
from monarchrt.dit import AttentionOp, TinyVideoDiT, flow_matching_terms, noise_levels
from paperworks import atomic_torch_save, atomic_write_text
from paperworks.device import resolve_device

log = logging.getLogger(__name__)


def world() -> tuple[int, int]:
    """(rank, world size); (0, 1) outside ``torch.distributed``."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def setup_distributed(device: str = "cpu") -> bool:
    """Join the process group when launched by ``torchrun``: nccl when the model runs on CUDA, else gloo."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return dist.is_available() and dist.is_initialized()
    dist.init_process_group("nccl" if str(device).startswith("cuda") else "gloo")
    return True


def rank_device(spec: str = "auto") -> str:
    """``device`` resolved (paperworks' ``auto``: CUDA when torch sees one); under ``torchrun`` on CUDA,
    this rank's GPU (``cuda:LOCAL_RANK``)."""
    dev = resolve_device(str(spec))
    if dev == "cuda" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dev = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return dev


def global_batch(data, batch: int, generator, *, chunk_frames: int = 1, context_mix: float = 0.0):
    """The step's global batch (videos, per-frame noise levels, noise, loss weights), the same on every
    rank; drawn on the CPU ``generator`` (see :func:`monarchrt.dit.noise_levels`)."""
    idx = torch.randint(0, data.shape[0], (batch,), generator=generator)
    t, w = noise_levels(batch, data.shape[1], chunk_frames, generator, context_mix=context_mix)
    eps = torch.randn(data[idx].shape, generator=generator)
    return data[idx], t, eps, w


def lr_factor(step: int, steps: int, *, warmup: int = 0, schedule: str = "constant") -> float:
    """Learning-rate multiplier at ``step``: linear warm-up over ``warmup`` steps, then constant or a
    cosine decay to 0 at ``steps`` (a function of the step alone, so resuming needs no scheduler state)."""
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")
    f = min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0
    if schedule == "cosine":
        f *= 0.5 * (1 + math.cos(math.pi * min(step, steps) / max(1, steps)))
    return f


def shard(batch: int, rank: int, size: int) -> slice:
    """This rank's contiguous slice of the global batch (equal sizes, so DDP's mean of the ranks'
    mean gradients is the gradient of the global mean loss)."""
    if batch % size:
        raise ValueError(f"batch={batch} must be divisible by the world size {size}")
    return slice(rank * batch // size, (rank + 1) * batch // size)


def _save(path: Path, state: dict) -> None:
    atomic_torch_save(state, path)


def train(model, data, attn, steps: int, *, batch: int, lr: float, seed: int, ckpt: Path | None = None,
          every: int = 0, resume: bool = False, tag: str = "train", context_mix: float = 0.0, warmup: int = 0,
          schedule: str = "constant"):
    """Adam on the flow-matching loss; checkpoints to ``ckpt`` every ``every`` steps, resumable.

    Runs on the model's device (the batches are drawn on the CPU generator and moved there).
    ``context_mix``: the fraction of videos trained in the sampler's pattern (clean context, one
    noise level for the generated chunk; :func:`monarchrt.dit.noise_levels`); ``warmup`` and
    ``schedule`` shape the learning rate (:func:`lr_factor`).
    Under ``torch.distributed`` the model is wrapped in DDP and ``batch`` is the global batch
    (it must divide by the world size). Returns the (unwrapped) model; ``model.loss_history``
    holds the global mean loss of every step run in this call.
    """
    rank, size = world()
    mine = shard(batch, rank, size)
    dev = next(model.parameters()).device
    lr_factor(0, steps, warmup=warmup, schedule=schedule)  # validates the schedule before any work
    net = torch.nn.parallel.DistributedDataParallel(model) if size > 1 else model
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    start = 0
    if resume and (ckpt is None or not Path(ckpt).exists()):
        # a silent fresh start would look like a resumed run (Hydra makes a new run directory each time)
        raise FileNotFoundError(f"{tag}: resume=true but there is no checkpoint at {ckpt}; point the run at the "
                                "earlier run's directory (hydra.run.dir=<it> / --out <it>) or drop resume")
    if resume:
        st = torch.load(ckpt, weights_only=True, map_location=dev)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        g.set_state(st["rng"].cpu())
        start = int(st["step"])
        if rank == 0:
            log.info("%s: resumed from %s at step %d", tag, ckpt, start)
    history = []
    for step in tqdm(range(start, steps), desc=tag, disable=None if rank == 0 else True):
        x0, t, eps, w = global_batch(data, batch, g, chunk_frames=attn.chunk_frames, context_mix=context_mix)
        for group in opt.param_groups:
            group["lr"] = lr * lr_factor(step, steps, warmup=warmup, schedule=schedule)
        x0, t, eps, w = (a[mine].to(dev) for a in (x0, t, eps, w))
        loss = flow_matching_terms(net, x0, t, eps, attn, w).mean()
        opt.zero_grad()
        loss.backward()  # DDP: gradients averaged over ranks
        value = loss.detach().clone()
        if size > 1:
            dist.all_reduce(value)
            value /= size
        if not math.isfinite(value.item()):  # every rank sees the same global loss and stops together
            raise RuntimeError(f"{tag}: loss is {value.item()} at step {step}")
        history.append(value.item())
        opt.step()
        if ckpt is not None and every and (step + 1) % every == 0:
            if rank == 0:
                _save(Path(ckpt), dict(model=model.state_dict(), opt=opt.state_dict(), rng=g.get_state(),
                                       step=step + 1))
            if size > 1:
                dist.barrier()
    model.loss_history = history
    return model


def train_kwargs(dc) -> dict:
    """The ``train`` keywords of the ``dit`` config section (the pre-training schedule)."""
    return dict(batch=int(dc.batch), lr=float(dc.lr), context_mix=float(dc.get("context_mix", 0.0)),
                warmup=int(dc.get("warmup", 0)), schedule=str(dc.get("schedule", "constant")))


def train_dit(dc, out_dir: Path, *, seed: int = 0, resume: bool = False, device: str = "cpu"):
    """Build data and the DiT from the ``dit`` config section and train it (dense attention) on ``device``."""
    rank, size = world()
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    data, _ = bouncing_squares(dc.train_videos, dc.frames, dc.size, generator=g)
    model = TinyVideoDiT(dc.frames, dc.size, dc.patch, dc.dim, dc.depth, dc.heads).to(device)
    op = AttentionOp("dense", model.layout, int(dc.chunk_frames))
    out_dir = Path(out_dir)
    if rank == 0:
        out_dir.mkdir(parents=True, exist_ok=True)
    if size > 1:
        dist.barrier()
    train(model, data, op, int(dc.steps), seed=seed, ckpt=out_dir / "checkpoint.pt",
          every=max(1, int(dc.checkpoint_every)), resume=resume, tag=f"dit rank {rank}/{size}", **train_kwargs(dc))
    if rank == 0:
        _save(out_dir / "model.pt", {k: v.cpu() for k, v in model.state_dict().items()})
        atomic_write_text(out_dir / "train_log.json", json.dumps(dict(world_size=size, steps=int(dc.steps),
                                                                      losses=model.loss_history)))
    return model


def main(argv=None) -> None:
    from paperworks.hydra_glue import compose
    from paperworks.threads import set_threads

    p = argparse.ArgumentParser(prog="monarchrt-train", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="directory for checkpoint.pt, model.pt, train_log.json")
    p.add_argument("--resume", action="store_true", help="continue from <out>/checkpoint.pt")
    p.add_argument("overrides", nargs="*", help="Hydra overrides of the package config, e.g. dit.steps=100")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    cfg = compose("monarchrt", args.overrides)
    device = rank_device(cfg.get("device", "auto"))
    distributed = setup_distributed(device)
    try:
        set_threads(cfg.get("threads", None) or 1)  # the common key (1 by default: one thread per rank)
        if device.startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        train_dit(cfg.dit, Path(args.out), seed=int(cfg.seed), resume=args.resume, device=device)
    finally:
        if distributed:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
