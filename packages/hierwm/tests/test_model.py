import pytest
import torch
from hierwm import FlatWorldModel, HierarchicalWorldModel, count_parameters, sample_noise_levels

SMALL = {"frame_shape": (3, 8, 8), "coarse_shape": (3, 4, 4)}


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 8, 3, 8, 8, generator=g), torch.randn(2, 8, 2, generator=g)


def test_equal_parameters_at_defaults():
    h, f = count_parameters(HierarchicalWorldModel()), count_parameters(FlatWorldModel())
    assert abs(f / h - 1) <= 0.05
    low = count_parameters(HierarchicalWorldModel().low_level)
    assert low <= 300_000


@pytest.mark.parametrize("cls", [HierarchicalWorldModel, FlatWorldModel])
def test_zero_context_df_loss_equals_tf(cls, data):
    torch.manual_seed(0)
    m = cls(**SMALL)
    x, a = data
    lv = sample_noise_levels(2, 8, objective="df", generator=torch.Generator().manual_seed(5))
    tf = m.loss(x, a, objective="tf", levels=lv, generator=torch.Generator().manual_seed(1))
    df0 = m.loss(x, a, objective="df", levels=lv, context_levels=torch.zeros_like(lv),
                 generator=torch.Generator().manual_seed(1))
    df = m.loss(x, a, objective="df", levels=lv, generator=torch.Generator().manual_seed(1))
    assert torch.equal(tf, df0)
    assert not torch.equal(tf, df)  # DF's noisy context is really used


@pytest.mark.parametrize("cls", [HierarchicalWorldModel, FlatWorldModel])
def test_perturbing_frame_t_changes_nothing_before_t(cls, data):
    torch.manual_seed(0)
    m = cls(**SMALL)
    x, a = data
    h0 = m.hidden_states(x, a)
    assert h0.shape == (2, 8, 64)
    for t in (3, 4, 6):
        x2 = x.clone()
        x2[:, t] += 3.0
        h1 = m.hidden_states(x2, a)
        assert torch.equal(h1[:, :t], h0[:, :t])
        assert not torch.allclose(h1[:, t], h0[:, t])


def test_rollout_is_causal_in_its_own_samples(data):
    torch.manual_seed(0)
    m = HierarchicalWorldModel(**SMALL)
    x, a = data
    r1 = m.rollout(x[:, :4], a[:, :8], horizon=8, steps=2, generator=torch.Generator().manual_seed(0))
    a2 = a[:, :8].clone()
    a2[:, 5:] += 1.0  # later actions cannot change earlier frames
    r2 = m.rollout(x[:, :4], a2, horizon=8, steps=2, generator=torch.Generator().manual_seed(0))
    assert r1.shape == (2, 8, 3, 8, 8)
    torch.testing.assert_close(r1[:, :4], r2[:, :4])
    assert not torch.allclose(r1[:, 5:], r2[:, 5:])


def test_save_load_roundtrip(tmp_path, data):
    torch.manual_seed(0)
    for cls in (HierarchicalWorldModel, FlatWorldModel):
        m = cls(**SMALL)
        path = m.save(tmp_path / f"{cls.__name__}.pt")
        m2 = cls.load(path)
        x, a = data
        for mm in (m, m2):
            mm.eval()
        torch.testing.assert_close(m.hidden_states(x, a), m2.hidden_states(x, a))
    with pytest.raises(ValueError, match="does not hold"):
        FlatWorldModel.load(tmp_path / "HierarchicalWorldModel.pt")
    with pytest.raises(FileNotFoundError):
        FlatWorldModel.load(tmp_path / "missing.pt")


def test_dtype_follows_the_module(data):
    m = FlatWorldModel(**SMALL).to(torch.float64)
    x, a = data
    assert m.hidden_states(x, a).dtype == torch.float64


def test_bad_input(data):
    m = HierarchicalWorldModel(**SMALL)
    x, a = data
    with pytest.raises(ValueError, match="frames must be"):
        m.loss(torch.zeros(2, 8, 3, 16, 16), a, objective="df")
    with pytest.raises(ValueError, match="action_dim"):
        m.loss(x, torch.zeros(2, 8, 3), objective="df")
    with pytest.raises(ValueError, match="multiple of coarse_stride"):
        m.rollout(x[:, :4], a[:, :6], horizon=6)
    for stab in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="stabilization"):
            m.rollout(x[:, :4], a[:, :4], horizon=4, stabilization=stab)
    bad = x.clone()
    bad[0, 1, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        m.loss(bad, a, objective="df")
    with pytest.raises(ValueError, match="objective"):
        m.loss(x, a, objective="ar")
    with pytest.raises(ValueError, match="frame_shape"):
        HierarchicalWorldModel(frame_shape=(3, 8))
    with pytest.raises(ValueError, match="coarse_shape"):
        HierarchicalWorldModel(frame_shape=(3, 8, 8), coarse_shape=(3, 3, 3))
