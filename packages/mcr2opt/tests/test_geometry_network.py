import numpy as np
import pytest
import torch
from mcr2opt import FeatureMLP, closed_form_maximizer, subspace_geometry
from mcr2opt.geometry import effective_rank


def test_orthogonal_subspaces_have_zero_cosines_and_their_ranks(gen):
    Z, y = closed_form_maximizer([10, 10, 10], 9, eps=0.5, lam=0.1, ranks=[2, 3, 3], generator=gen)
    geo = subspace_geometry(Z, y)
    assert geo["rank"] == [2, 3, 3]
    assert geo["mean_cosine"] < 1e-12
    assert geo["effective_rank"] == pytest.approx([2, 3, 3], abs=1e-9)   # equal singular values


def test_shared_subspace_gives_cosine_one(gen):
    B = torch.randn(2, 6, generator=gen, dtype=torch.float64)
    Z = torch.randn(20, 2, generator=gen, dtype=torch.float64) @ B
    geo = subspace_geometry(Z, torch.arange(20) % 2, rank=2)
    assert geo["mean_cosine"] == pytest.approx(1.0, abs=1e-9)
    assert effective_rank(torch.zeros(3, 3)) == 0.0


def test_model_saves_and_loads_self_contained(tmp_path, gen):
    m = FeatureMLP(64, 16, 8, n_classes=10).double()
    x = torch.randn(5, 64, generator=gen, dtype=torch.float64)
    path = m.save(tmp_path / "model.pt")
    m2 = FeatureMLP.load(path).double()
    assert torch.equal(m(x), m2(x)) and torch.equal(m.logits(x), m2.logits(x))
    assert torch.allclose(m(x).norm(dim=1), torch.ones(5, dtype=torch.float64))
    blob = torch.load(path, weights_only=True)
    assert set(blob) == {"sizes", "state_dict"}
    with pytest.raises(FileNotFoundError):
        FeatureMLP.load(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match="no classifier head"):
        FeatureMLP(64, 16, 8).logits(x.float())


def test_training_with_mcr2_separates_digits():
    from mcr2opt.data import digits_splits
    from mcr2opt.network import evaluate, train

    sp = digits_splits(0)
    assert sum(len(v[1]) for v in sp.values()) == 1797
    model, info = train(sp, loss="mcr2", steps=40, lr=0.01, eval_every=20)
    ev = evaluate(model, sp)
    assert ev["ncm"] > 0.8 and ev["delta_r"] > 0 and np.asarray(ev["cosines"]).shape == (10, 10)
    with pytest.raises(ValueError, match="loss"):
        train(sp, loss="mse", steps=1, lr=0.01)
