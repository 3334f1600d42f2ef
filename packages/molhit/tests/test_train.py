"""The training entry point: one process in-process, and two processes under torchrun (DDP, gloo)."""

import json
import os
import subprocess
import sys

import pytest
import torch
from molhit.train import main

TINY = ["data.n_train=60", "model.T=5", "model.n_layers=1", "model.d_model=16", "model.d_edge=8",
        "model.n_heads=2", "train.batch_size=8", "train.log_every=0"]


def test_single_process_trains_a_users_file_and_counts_bad_rows(tmp_path):
    f = tmp_path / "mols.smi"
    f.write_text("CCO\nc1ccccc1\nnot_smiles\nCC(=O)O\nCCP\nc1ccncc1\n")
    rep = main([f"out_dir={tmp_path / 'out'}", f"data.file={f}", "train.steps=3", *TINY])
    assert rep["world_size"] == 1 and rep["steps_done"] == 3
    assert rep["skipped_training_rows"] == {"invalid": 1, "vocabulary": 1, "too_large": 0}
    state = torch.load(tmp_path / "out" / "checkpoint.pt", weights_only=True)
    assert state["step"] == 3 and state["world_size"] == 1
    rep2 = main([f"out_dir={tmp_path / 'out'}", f"data.file={f}", "train.steps=5", "resume=true", *TINY])
    assert rep2["steps_done"] == 5 and rep2["losses"][:3] == rep["losses"]
    with pytest.raises(SystemExit, match="out_dir"):
        main(["train.steps=1", *TINY])


def _torchrun(out, *overrides):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m",
           "molhit.train", f"out_dir={out}", *TINY, *overrides]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((out / "train.json").read_text())


@pytest.mark.slow
def test_torchrun_two_processes_ddp_and_resume(tmp_path):
    """~40 s: three 2-process launches. Run by hand: pytest -m slow tests/test_train.py."""
    full = _torchrun(tmp_path / "full", "train.steps=4")
    assert full["world_size"] == 2 and full["steps_done"] == 4
    ranks = [json.loads((tmp_path / "full" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["param_checksum"] == ranks[1]["param_checksum"]  # DDP kept the replicas equal
    state = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)
    assert state["world_size"] == 2 and len(state["rng"]) == 2 and not torch.equal(*state["rng"])
    _torchrun(tmp_path / "cut", "train.steps=2")
    resumed = _torchrun(tmp_path / "cut", "train.steps=4", "resume=true")
    assert resumed["losses"] == full["losses"] and resumed["param_checksum"] == full["param_checksum"]
    with pytest.raises(ValueError, match="world size"):  # one process cannot continue a 2-rank run exactly
        main([f"out_dir={tmp_path / 'cut'}", "train.steps=6", "resume=true", *TINY])
