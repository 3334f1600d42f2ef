import json
import os
import subprocess
import sys

import pytest
import torch
from monarchrt.data import bouncing_squares
from monarchrt.dit import AttentionOp, TinyVideoDiT, flow_matching_terms
from monarchrt.train import global_batch, lr_factor, main, rank_device, shard

TINY = ["dit.frames=4", "dit.size=8", "dit.dim=16", "dit.depth=1", "dit.heads=2", "dit.train_videos=8",
        "dit.batch=4", "dit.checkpoint_every=1"]


def torchrun(out, *args, steps=2):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m",
           "monarchrt.train", "--out", str(out), *args, *TINY, f"dit.steps={steps}"]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def load(out):
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    return ck, json.loads((out / "train_log.json").read_text())


def assert_same_state(a, b, atol=1e-6):
    assert a["step"] == b["step"]
    for name in a["model"]:
        torch.testing.assert_close(a["model"][name], b["model"][name], atol=atol, rtol=1e-5)
    for i, st in a["opt"]["state"].items():  # Adam moments: the gradients seen on the global batch
        for key in ("exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(st[key], b["opt"]["state"][i][key], atol=atol * 1e-2, rtol=1e-4)
    assert torch.equal(a["rng"], b["rng"])


def test_rank_shards_average_to_the_global_batch_gradient():
    """What DDP computes (the mean over ranks of each shard's mean-loss gradient, with the shards
    `train` uses) equals the one-process gradient on the global batch, for 1, 2 and 4 ranks."""
    torch.manual_seed(0)
    model = TinyVideoDiT(frames=4, size=8, patch=2, dim=16, depth=1, heads=2)
    for p in model.parameters():
        p.data.add_(0.1 * torch.randn(p.shape))
    data, _ = bouncing_squares(8, frames=4, size=8, square=2, generator=torch.Generator().manual_seed(0))
    op = AttentionOp("dense", model.layout, 2)
    x0, t, eps, w = global_batch(data, 4, torch.Generator().manual_seed(1), chunk_frames=2, context_mix=0.5)

    def grads(sl):
        model.zero_grad()
        flow_matching_terms(model, x0[sl], t[sl], eps[sl], op, w[sl]).mean().backward()
        return [p.grad.clone() for p in model.parameters()]

    full = grads(slice(None))
    for size in (1, 2, 4):
        per_rank = [grads(shard(4, r, size)) for r in range(size)]
        for i, g in enumerate(full):
            torch.testing.assert_close(sum(gr[i] for gr in per_rank) / size, g, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="divisible"):
        shard(4, 0, 3)


@pytest.mark.slow  # ~15 s on 2 shared cores: three interpreters importing torch; run with -m slow
def test_torchrun_two_processes_match_one_process_on_the_same_global_batch(tmp_path):
    torchrun(tmp_path / "ddp")
    main(["--out", str(tmp_path / "one"), *TINY, "dit.steps=2"])
    ddp, log_ddp = load(tmp_path / "ddp")
    one, log_one = load(tmp_path / "one")
    assert log_ddp["world_size"] == 2 and log_one["world_size"] == 1
    assert log_ddp["losses"] == pytest.approx(log_one["losses"], rel=1e-5)
    assert_same_state(ddp, one)
    assert ddp["step"] == 2 and (tmp_path / "ddp" / "model.pt").exists()


def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(tmp_path):
    main(["--out", str(tmp_path / "full"), *TINY, "dit.steps=4"])
    main(["--out", str(tmp_path / "part"), *TINY, "dit.steps=2"])
    main(["--out", str(tmp_path / "part"), "--resume", *TINY, "dit.steps=4"])
    full, _ = load(tmp_path / "full")
    part, log = load(tmp_path / "part")
    assert len(log["losses"]) == 2  # the resumed call ran steps 3 and 4 only
    assert_same_state(full, part, atol=0)


@pytest.mark.slow
def test_torchrun_resume_equals_uninterrupted_single_process_run(tmp_path):
    torchrun(tmp_path / "ddp", steps=1)
    torchrun(tmp_path / "ddp", "--resume", steps=3)
    main(["--out", str(tmp_path / "one"), *TINY, "dit.steps=3"])
    assert_same_state(load(tmp_path / "ddp")[0], load(tmp_path / "one")[0])


def test_learning_rate_schedule_warms_up_and_decays_to_zero():
    assert [lr_factor(s, 10, warmup=4) for s in (0, 1, 3, 9)] == [0.25, 0.5, 1.0, 1.0]
    cos = [lr_factor(s, 10, schedule="cosine") for s in range(11)]
    assert cos[0] == 1.0 and abs(cos[5] - 0.5) < 1e-12 and cos[10] == 0.0 and cos == sorted(cos, reverse=True)
    with pytest.raises(ValueError, match="schedule"):
        lr_factor(0, 10, schedule="linear")


def test_rank_device_follows_paperworks_auto_and_torchrun_local_rank(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert rank_device("cpu") == "cpu"
    assert rank_device("auto") == ("cuda:1" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            rank_device("cuda")
