import copy

import numpy as np
import pytest
import torch
from matt import focus_init, fvt_init, random_init
from matt.init import overlap, ppmi_svd, sparsemax, token_strings


def test_fvt_is_mean_of_subtokens_and_copies_overlap(world):
    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    old = teacher.get_input_embeddings().weight.detach().clone()
    m = copy.deepcopy(teacher)
    new = fvt_init(m, ta, tb)
    assert new.shape == (len(tb), old.shape[1])
    assert m.get_input_embeddings().weight.shape[0] == len(tb)
    same = overlap(ta, tb)
    assert len(same) > 10
    for j, i in list(same.items())[:50]:
        assert torch.equal(new[j], old[i])  # overlap copied exactly
    strings = token_strings(tb)
    for j in [j for j in range(len(tb)) if j not in same][:20]:
        ids = ta(strings[j], add_special_tokens=False)["input_ids"]
        torch.testing.assert_close(new[j], old[ids].mean(0))


def test_focus_copies_overlap_and_mixes_convexly(world):
    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    old = teacher.get_input_embeddings().weight.detach().clone()
    m = copy.deepcopy(teacher)
    new = focus_init(m, ta, tb, world["transfer"])
    same = overlap(ta, tb)
    for j, i in same.items():
        assert torch.equal(new[j], old[i])
    assert torch.isfinite(new).all()


def test_sparsemax_matches_projection():
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    z = rng.normal(size=6) * 2
    p = sparsemax(z)
    assert p.min() >= 0 and abs(p.sum() - 1) < 1e-12
    res = minimize(lambda x: ((x - z) ** 2).sum(), np.full(6, 1 / 6), method="SLSQP", bounds=[(0, 1)] * 6,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}])
    np.testing.assert_allclose(p, res.x, atol=1e-5)


def test_ppmi_svd_shape(world):
    aux = ppmi_svd(world["transfer"], world["tb"], dim=8)
    assert aux.shape == (len(world["tb"]), 8) and np.isfinite(aux).all()


def test_random_init_seeded(world):
    a, b = copy.deepcopy(world["teacher"]), copy.deepcopy(world["teacher"])
    assert torch.equal(random_init(a, world["ta"], world["tb"], seed=3), random_init(b, world["ta"], world["tb"], seed=3))


def test_encoder_decoder_rejected(world):
    from transformers import T5Config, T5ForConditionalGeneration

    m = T5ForConditionalGeneration(T5Config(vocab_size=100, d_model=16, d_ff=16, num_layers=1, num_heads=2, d_kv=8))
    with pytest.raises(ValueError, match="encoder-decoder"):
        fvt_init(m, world["ta"], world["tb"])
