import numpy as np
import pytest
import torch
from latentwam import LatentWAM, VLAPolicy, evaluate, probe, train
from latentwam.train import latent_matrix


def test_smoke_losses_fall_and_latent_variance_stays_up(trained, demos):
    model, hist = trained
    first = np.mean([h["action"] for h in hist[:10]])
    last = np.mean([h["action"] for h in hist[-10:]])
    assert last < 0.9 * first
    assert np.mean([h["align"] for h in hist[-10:]]) < np.mean([h["align"] for h in hist[:10]])
    assert np.mean([h["latent_std"] for h in hist[-10:]]) >= np.mean([h["latent_std"] for h in hist[:10]])
    lat = latent_matrix(model, demos, n=256)
    assert lat.std(0).mean() > 1e-3


def test_trained_model_acts_and_probes(trained, demos):
    model, _ = trained
    res = evaluate("latentwam/Intercept-v0", model, episodes=10, seed=0)
    assert 0 <= res["success"] <= 1 and res["episodes"] == 10
    r2 = probe(model, demos.subset_episodes(np.arange(40)), "ball_future")
    assert np.isfinite(r2) and r2 <= 1


def test_nan_loss_stops_training_naming_the_step(demos, monkeypatch):
    torch.manual_seed(0)
    m = VLAPolicy(action_dim=2, proprio_dim=2)
    real, calls = m.loss, {"n": 0}

    def loss(batch, generator=None):
        calls["n"] += 1
        out, logs = real(batch, generator)
        return (out * float("nan"), logs) if calls["n"] == 3 else (out, logs)

    monkeypatch.setattr(m, "loss", loss)
    with pytest.raises(FloatingPointError, match="step 3"):
        train(m, demos, steps=5, batch_size=4)


def test_resume_continues_to_the_same_result(demos, tmp_path):
    small = demos.subset_episodes(np.arange(10))

    def fresh():
        torch.manual_seed(0)
        return LatentWAM(action_dim=2, proprio_dim=2, dim=16, heads=2)

    a = fresh()
    train(a, small, steps=6, batch_size=4, seed=1)
    b = fresh()
    ck = tmp_path / "ck.pt"
    train(b, small, steps=3, batch_size=4, seed=1, checkpoint=ck)
    c = fresh()
    train(c, small, steps=6, batch_size=4, seed=1, checkpoint=ck, resume=True)
    for k, v in a.state_dict().items():
        torch.testing.assert_close(v, c.state_dict()[k], rtol=0, atol=0)
    with pytest.raises(FileNotFoundError, match="checkpoint"):
        train(fresh(), small, steps=2, checkpoint=tmp_path / "missing.pt", resume=True)


def test_train_bad_input(demos):
    m = VLAPolicy(action_dim=3, proprio_dim=2)
    with pytest.raises(ValueError, match="action_dim"):
        train(m, demos, steps=1)
    with pytest.raises(ValueError, match="steps"):
        train(VLAPolicy(action_dim=2, proprio_dim=2), demos, steps=0)
    with pytest.raises(ValueError, match="future_offsets"):
        train(LatentWAM(action_dim=2, proprio_dim=2, future_offsets=(2, 6)), demos, steps=1)
