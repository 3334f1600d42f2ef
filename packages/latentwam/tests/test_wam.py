import numpy as np
import pytest
import torch
from latentwam import HFBackbone, LatentWAM, PixelWAM, VLAPolicy, anti_collapse, effective_rank
from latentwam.checks import alignment_grad_on_posterior, future_grad_into_prior, prior_future_gap, spread_latents
from latentwam.wam import ChunkPolicy

KW = {"action_dim": 2, "proprio_dim": 2}


@pytest.mark.parametrize("train_mode", [True, False])
def test_prior_is_bit_identical_under_perturbed_future(train_mode):
    torch.manual_seed(0)
    assert prior_future_gap(LatentWAM(**KW), train_mode) == 0.0


def test_prior_gets_no_gradient_from_future():
    torch.manual_seed(0)
    assert future_grad_into_prior(LatentWAM(**KW)) == 0.0


def test_posterior_sees_the_future(batch):
    torch.manual_seed(0)
    m = LatentWAM(**KW)
    a = m(batch["frames"], batch["proprio"], future=batch["future"])["latents_post"]
    b = m(batch["frames"], batch["proprio"], future=torch.zeros_like(batch["future"]))["latents_post"]
    assert (a - b).abs().max() > 1e-4


def test_stop_grad_keeps_alignment_off_the_posterior():
    torch.manual_seed(0)
    assert alignment_grad_on_posterior(LatentWAM(**KW, stop_grad=True)) == 0.0
    assert alignment_grad_on_posterior(LatentWAM(**KW, stop_grad=False)) > 1e-6


def test_samples_in_a_batch_never_interact(batch):
    torch.manual_seed(0)
    for m in (LatentWAM(**KW), VLAPolicy(**KW), PixelWAM(**KW)):
        m.train()
        full = m(batch["frames"], batch["proprio"])["actions"]
        one = m(batch["frames"][2:3], batch["proprio"][2:3])["actions"]
        torch.testing.assert_close(full[2:3], one, atol=1e-5, rtol=1e-5)


def _reference_anti_collapse(h, gamma=1.0, eps=1e-4):
    h = np.asarray(h, dtype=np.float64)
    total = 0.0
    for m in range(h.shape[1]):
        z = h[:, m]
        std = np.sqrt(np.var(z, axis=0, ddof=1) + eps)
        c = np.cov(z, rowvar=False)
        off = c - np.diag(np.diag(c))
        total += np.maximum(gamma - std, 0).mean() + (off ** 2).sum() / z.shape[1]
    return total / h.shape[1]


def test_anti_collapse_zero_on_spread_positive_on_collapsed_and_matches_numpy(rng):
    assert float(anti_collapse(spread_latents())) == pytest.approx(0.0, abs=1e-12)
    assert float(anti_collapse(torch.ones(32, 4, 16))) > 0.9
    h = rng.normal(scale=0.5, size=(40, 3, 8))
    assert float(anti_collapse(torch.tensor(h))) == pytest.approx(_reference_anti_collapse(h), rel=1e-9)


def test_effective_rank_matches_numpy(rng):
    x = rng.normal(size=(50, 6)) * np.array([5, 3, 1, 1, 0.1, 0.01])
    s = np.linalg.svd(x - x.mean(0), compute_uv=False)
    p = s / s.sum()
    assert effective_rank(x) == pytest.approx(float(np.exp(-(p * np.log(p)).sum())), rel=1e-9)
    assert effective_rank(np.outer(np.arange(10.0), np.ones(4))) == pytest.approx(1.0, abs=1e-6)


def test_uint8_frames_are_scaled(batch):
    torch.manual_seed(0)
    m = LatentWAM(**KW).eval()
    u8 = (batch["frames"] * 255).round().to(torch.uint8)
    a = m(u8, batch["proprio"])["actions"]
    b = m(u8.float() / 255, batch["proprio"])["actions"]
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("cls", [LatentWAM, VLAPolicy, PixelWAM])
def test_shapes_loss_and_save_load(cls, batch, tmp_path):
    torch.manual_seed(0)
    m = cls(**KW)
    out = m(batch["frames"], batch["proprio"], future=batch["future"])
    assert out["actions"].shape == (5, 8, 2)
    loss, logs = m.loss(batch)
    loss.backward()
    assert np.isfinite(logs["loss"])
    m.save(tmp_path / "m.pt")
    m2 = ChunkPolicy.load(tmp_path / "m.pt")
    assert type(m2) is cls
    torch.testing.assert_close(m.act(batch["frames"], batch["proprio"]), m2.act(batch["frames"], batch["proprio"]))


def test_flow_heads(batch):
    torch.manual_seed(0)
    m = LatentWAM(**KW, head="flow")
    loss, _ = m.loss(batch)
    assert torch.isfinite(loss)
    a = m.act(batch["frames"], batch["proprio"])
    assert a.shape == (5, 8, 2) and a.abs().max() <= 1
    torch.testing.assert_close(a, m.act(batch["frames"], batch["proprio"]))
    p = PixelWAM(**KW, decoder="flow")
    assert torch.isfinite(p.loss(batch)[0])
    assert p(batch["frames"], batch["proprio"])["frames_pred"].shape == (5, 2, 3, 24, 24)


def test_hf_backbone_on_tiny_vit(batch, tmp_path):
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    vit = ViTModel(ViTConfig(image_size=24, patch_size=8, hidden_size=32, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=64))
    m = LatentWAM(**KW, backbone=HFBackbone(vit))
    loss, _ = m.loss(batch)
    loss.backward()
    assert vit.embeddings.patch_embeddings.projection.weight.grad is not None
    assert m(batch["frames"], batch["proprio"])["latents_prior"].shape == (5, 4, 64)
    assert prior_future_gap(m, True) == 0.0
    with pytest.raises(TypeError, match="Hugging Face"):
        HFBackbone(torch.nn.Linear(2, 2))
    # a model on an HF backbone saves self-contained (backbone class + config) and reloads identically
    path = m.save(tmp_path / "vit_wam.pt")
    m2 = LatentWAM.load(path)
    assert isinstance(m2.tokenizer, HFBackbone) and type(m2.tokenizer.model) is ViTModel
    m.eval()
    torch.testing.assert_close(m2.act(batch["frames"], batch["proprio"]), m.act(batch["frames"], batch["proprio"]),
                               rtol=0, atol=0)


@pytest.mark.parametrize("kw, err", [
    ({"head": "l1"}, "head"), ({"num_latents": 3}, "multiple"), ({"reg_weight": -1.0}, "reg_weight"),
    ({"reg_weight": "0.1"}, "reg_weight"), ({"future_offsets": (0, 4)}, "future_offsets"), ({"dim": 30}, "divisible"),
    ({"stop_grad": 1}, "bools"),
])
def test_bad_hyper_parameters(kw, err):
    with pytest.raises((ValueError, TypeError), match=err):
        LatentWAM(**KW, **kw)


def test_bad_inputs(batch):
    torch.manual_seed(0)
    m = LatentWAM(**KW)
    with pytest.raises(ValueError, match="frames must have shape"):
        m(torch.rand(5, 2, 3, 32, 32), batch["proprio"])
    with pytest.raises(ValueError, match="frames must have shape"):
        m(torch.rand(5, 3, 3, 24, 24), batch["proprio"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        m(batch["frames"] * 255, batch["proprio"])
    with pytest.raises(ValueError, match="NaN"):
        m(batch["frames"] * float("nan"), batch["proprio"])
    with pytest.raises(ValueError, match="proprio"):
        m(batch["frames"], torch.rand(5, 3))
    with pytest.raises(ValueError, match="future must have shape"):
        m(batch["frames"], batch["proprio"], future=torch.rand(5, 3, 3, 24, 24))
    with pytest.raises(ValueError, match="action space"):
        m.loss({**batch, "actions": batch["actions"] * 3})
    with pytest.raises(ValueError, match="posterior branch needs"):
        m.loss({k: v for k, v in batch.items() if k != "future"})
