"""Training entry point for one process or ``torchrun`` (DDP): ``python -m molhit.train key=value ...``.

::

    python -m molhit.train out_dir=/tmp/m train.steps=2000 train.checkpoint_every=200
    torchrun --standalone --nproc_per_node=2 -m molhit.train out_dir=/tmp/m train.steps=2000
    torchrun --standalone --nproc_per_node=2 -m molhit.train out_dir=/tmp/m train.steps=4000 resume=true

The overrides are those of the ``molhit`` Hydra config (``experiment=...``, ``model.*``,
``train.*``, ``data.n_train`` or ``data.file`` for a user's SMILES file). Under torchrun the
process group uses gloo on CPU (NCCL on CUDA), the global ``train.batch_size`` is split over
the ranks, rank 0 writes ``checkpoint.pt`` (model, optimiser, step, losses and every rank's
RNG state) and ``train.json``; every rank writes ``rank<r>.json`` with a checksum of its
weights (DDP keeps them identical). ``resume=true`` continues from ``checkpoint.pt`` to the
same result as an uninterrupted run with the same world size.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import torch

from molhit.data import graphs_from_smiles, load_moses, read_smiles_file
from molhit.encoding import decoupled_encoding, digress_encoding
from molhit.model import MolHIT, _dist_info
from paperworks import atomic_write_text
from paperworks.hydra_glue import compose
from paperworks.threads import set_threads

log = logging.getLogger("molhit.train")


def training_data(cfg, encoding, seed: int) -> dict:
    """The training graphs: ``data.file`` (a user's SMILES file) or ``data.n_train`` MOSES molecules.

    Invalid SMILES in the file are skipped and counted (``skipped["invalid"]``), with atoms outside
    the vocabulary and oversized molecules.
    """
    path = cfg.data.get("file")
    if path:
        smiles, bad = read_smiles_file(path)
        data = graphs_from_smiles(smiles, encoding)
        data["skipped"]["invalid"] += bad
        return data
    max_atoms = cfg.data.get("max_atoms")   # e.g. quick: small molecules only (counted as too_large)
    return graphs_from_smiles(load_moses("train", int(cfg.data.n_train), seed), encoding,
                              max_atoms=None if max_atoms is None else int(max_atoms))


def encoding_of(name: str):
    """``decoupled`` (DAE) or ``digress`` (element types) atom encoding."""
    if name == "decoupled":
        return decoupled_encoding()
    if name == "digress":
        return digress_encoding()
    raise ValueError(f"encoding must be 'decoupled' or 'digress', got {name!r}")


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    cfg = compose("molhit", argv)
    if not cfg.get("out_dir"):
        raise SystemExit("molhit.train needs out_dir=DIR (where checkpoint.pt and train.json go)")
    out = Path(cfg.out_dir)
    world_env = int(os.environ.get("WORLD_SIZE", "1"))
    device = "cuda" if str(cfg.device) in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
    if world_env > 1:
        import torch.distributed as dist

        dist.init_process_group("nccl" if device == "cuda" else "gloo")
        if device == "cuda":
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    rank, world = _dist_info()
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"[rank {rank}] %(name)s %(message)s")
    set_threads(cfg.get("threads", None) or 1)
    seed = int(cfg.seed)
    m = cfg.model
    model = MolHIT(encoding_of(str(cfg.get("encoding", "decoupled"))), process=str(cfg.processes[0]),
                   T=int(m.T), n_layers=int(m.n_layers), d_model=int(m.d_model), d_edge=int(m.d_edge),
                   n_heads=int(m.n_heads), device=device)
    data = training_data(cfg, model.encoding, seed)
    t0 = time.perf_counter()
    losses = model.fit(data, steps=int(cfg.train.steps), batch_size=int(cfg.train.batch_size),
                       lr=float(cfg.train.lr), lr_schedule=str(cfg.train.get("lr_schedule", "constant")), seed=seed,
                       log_every=int(cfg.train.log_every),
                       checkpoint=out / "checkpoint.pt", checkpoint_every=int(cfg.train.checkpoint_every),
                       resume=bool(cfg.resume), time_limit=cfg.train.get("time_limit"))
    checksum = float(sum(p.detach().double().sum() for p in model.net.parameters()))
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"rank{rank}.json", json.dumps({"rank": rank, "param_checksum": checksum}))
    report = {"world_size": world, "steps_done": len(losses), "losses": losses, "param_checksum": checksum,
              "skipped_training_rows": data["skipped"], "seconds": time.perf_counter() - t0,
              "process": model.process_name, "encoding": model.encoding.name}
    if rank == 0:
        atomic_write_text(out / "train.json", json.dumps(report, indent=1))
        log.info("trained %d steps on %d rank(s); wrote %s", len(losses), world, out / "train.json")
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    return report


if __name__ == "__main__":
    main()
