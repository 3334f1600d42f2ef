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
from monarchrt.dit import AttentionOp, TinyVideoDiT, flow_matching_terms
from paperworks import atomic_write_text

log = logging.getLogger(__name__)


def world() -> tuple[int, int]:
    """(rank, world size); (0, 1) outside ``torch.distributed``."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def setup_distributed() -> bool:
    """Join the process group when launched by ``torchrun`` (gloo on CPU, nccl on CUDA)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return dist.is_available() and dist.is_initialized()
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return True


def global_batch(data, batch: int, generator):
    """The step's global batch (videos, per-frame noise levels, noise), the same on every rank."""
    idx = torch.randint(0, data.shape[0], (batch,), generator=generator)
    t = torch.rand(batch, data.shape[1], generator=generator)
    eps = torch.randn(data[idx].shape, generator=generator)
    return data[idx], t, eps


def shard(batch: int, rank: int, size: int) -> slice:
    """This rank's contiguous slice of the global batch (equal sizes, so DDP's mean of the ranks'
    mean gradients is the gradient of the global mean loss)."""
    if batch % size:
        raise ValueError(f"batch={batch} must be divisible by the world size {size}")
    return slice(rank * batch // size, (rank + 1) * batch // size)


def _save(path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train(model, data, attn, steps: int, *, batch: int, lr: float, seed: int, ckpt: Path | None = None,
          every: int = 0, resume: bool = False, tag: str = "train"):
    """Adam on the flow-matching loss; checkpoints to ``ckpt`` every ``every`` steps, resumable.

    Under ``torch.distributed`` the model is wrapped in DDP and ``batch`` is the global batch
    (it must divide by the world size). Returns the (unwrapped) model; ``model.loss_history``
    holds the global mean loss of every step run in this call.
    """
    rank, size = world()
    mine = shard(batch, rank, size)
    net = torch.nn.parallel.DistributedDataParallel(model) if size > 1 else model
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    start = 0
    if resume and (ckpt is None or not Path(ckpt).exists()):
        # a silent fresh start would look like a resumed run (Hydra makes a new run directory each time)
        raise FileNotFoundError(f"{tag}: resume=true but there is no checkpoint at {ckpt}; point the run at the "
                                "earlier run's directory (hydra.run.dir=<it> / --out <it>) or drop resume")
    if resume:
        st = torch.load(ckpt, weights_only=True, map_location="cpu")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        g.set_state(st["rng"])
        start = int(st["step"])
        if rank == 0:
            log.info("%s: resumed from %s at step %d", tag, ckpt, start)
    history = []
    for step in tqdm(range(start, steps), desc=tag, disable=None if rank == 0 else True):
        x0, t, eps = global_batch(data, batch, g)
        loss = flow_matching_terms(net, x0[mine], t[mine], eps[mine], attn).mean()
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


def train_dit(dc, out_dir: Path, *, seed: int = 0, resume: bool = False):
    """Build data and the DiT from the ``dit`` config section and train it (dense attention)."""
    rank, size = world()
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    data, _ = bouncing_squares(dc.train_videos, dc.frames, dc.size, generator=g)
    model = TinyVideoDiT(dc.frames, dc.size, dc.patch, dc.dim, dc.depth, dc.heads)
    op = AttentionOp("dense", model.layout, int(dc.chunk_frames))
    out_dir = Path(out_dir)
    if rank == 0:
        out_dir.mkdir(parents=True, exist_ok=True)
    if size > 1:
        dist.barrier()
    train(model, data, op, dc.steps, batch=dc.batch, lr=dc.lr, seed=seed, ckpt=out_dir / "checkpoint.pt",
          every=max(1, int(dc.checkpoint_every)), resume=resume, tag=f"dit rank {rank}/{size}")
    if rank == 0:
        _save(out_dir / "model.pt", model.state_dict())
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
    distributed = setup_distributed()
    try:
        cfg = compose("monarchrt", args.overrides)
        set_threads(cfg.get("threads", None) or 1)  # the common key (1 by default: one thread per rank)
        train_dit(cfg.dit, Path(args.out), seed=int(cfg.seed), resume=args.resume)
    finally:
        if distributed:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
