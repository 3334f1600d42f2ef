import numpy as np
import pytest
import torch
from hierwm import FlatWorldModel, HierarchicalWorldModel, LatentSequenceDataset, train


def test_smoke_losses_fall(trained):
    for _, losses in trained.values():
        assert len(losses) == 20
        assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_nan_loss_stops_training_naming_the_step(toy, monkeypatch):
    m = FlatWorldModel(frame_shape=(3, 8, 8), coarse_shape=(3, 4, 4), width=16)
    orig = m.loss
    calls = {"n": 0}

    def loss(*a, **k):
        calls["n"] += 1
        out = orig(*a, **k)
        return out * float("nan") if calls["n"] == 3 else out

    monkeypatch.setattr(m, "loss", loss)
    with pytest.raises(FloatingPointError, match="at step 2"):
        train(m, toy, objective="df", steps=5, batch_size=4)


def test_resume_continues_to_the_same_result(toy, tmp_path):
    def fresh():
        torch.manual_seed(0)
        return HierarchicalWorldModel(frame_shape=(3, 8, 8), coarse_shape=(3, 4, 4), width=16)

    a = fresh()
    full = train(a, toy, objective="df_tf", steps=6, batch_size=4, seed=3)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(fresh(), toy, objective="df_tf", steps=6, resume=True, checkpoint=tmp_path / "none.pt")
    # interrupt during step 5 (the checkpoint holds step 3), then resume in a fresh model
    stop, ck = fresh(), tmp_path / "ck.pt"
    orig, calls = stop.loss, {"n": 0}

    class Stop(Exception):
        pass

    def loss(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 5:
            raise Stop
        return orig(*args, **kw)

    stop.loss = loss
    with pytest.raises(Stop):
        train(stop, toy, objective="df_tf", steps=6, batch_size=4, seed=3, checkpoint=ck, checkpoint_every=3)
    assert torch.load(ck, weights_only=True)["step"] == 3
    d = fresh()
    res = train(d, toy, objective="df_tf", steps=6, batch_size=4, seed=3, checkpoint=ck, resume=True)
    np.testing.assert_allclose(res["losses"], full["losses"], rtol=1e-5)
    for p, q in zip(a.parameters(), d.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def _latent_file(tmp_path, *, actions=True, nan=False, suffix=".npz"):
    rng = np.random.default_rng(0)
    lat = rng.normal(size=(6, 8, 4, 8, 8)).astype(np.float32)
    if nan:
        lat[2, 3, 0, 0, 0] = np.nan
    doc = {"latents": lat}
    if actions:
        doc["actions"] = rng.normal(size=(6, 8, 2)).astype(np.float32)
    path = tmp_path / f"lat{suffix}"
    if suffix == ".npz":
        np.savez(path, **doc)
    else:
        torch.save({k: torch.from_numpy(v) for k, v in doc.items()}, path)
    return path


def test_user_latents_train_and_roll_out(tmp_path):
    for suffix in (".npz", ".pt"):
        ds = LatentSequenceDataset(_latent_file(tmp_path, suffix=suffix))
        assert ds.frame_shape == (4, 8, 8)
        m = HierarchicalWorldModel(frame_shape=(4, 8, 8), coarse_shape=(4, 4, 4), width=16)
        train(m, ds, objective="df", steps=2, batch_size=2)
        f, a = ds.get_batch([0])
        assert m.rollout(f[:, :4], a[:, :4], horizon=4, steps=2).shape == (1, 4, 4, 8, 8)


def test_latent_file_errors(tmp_path):
    with pytest.raises(ValueError, match="actions"):
        LatentSequenceDataset(_latent_file(tmp_path, actions=False))
    with pytest.raises(ValueError, match="NaN"):
        LatentSequenceDataset(_latent_file(tmp_path, nan=True))
    with pytest.raises(FileNotFoundError):
        LatentSequenceDataset(tmp_path / "nope.npz")


def test_trains_under_a_process_group_with_ddp(toy, tmp_path):
    """What `torchrun` sets up: an initialised process group makes `train` wrap the model in DDP."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        m = HierarchicalWorldModel(frame_shape=(3, 8, 8), coarse_shape=(3, 4, 4), width=16)
        before = [p.detach().clone() for p in m.parameters()]
        hist = train(m, toy, objective="df_tf", steps=2, batch_size=2, checkpoint=tmp_path / "ck.pt")
    finally:
        dist.destroy_process_group()
    assert len(hist["losses"]) == 2 and (tmp_path / "ck.pt").exists()
    assert any(not torch.equal(a, b) for a, b in zip(before, m.parameters(), strict=True))
