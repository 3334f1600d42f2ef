import warnings

import numpy as np
import pytest
import torch
from malora import LinearHead, merge_peft, mixing_coefficients
from malora.peft_merge import _lora_modules
from peft import LoraConfig, get_peft_model


def test_cat_is_exact_and_linear_is_not(tiny_peft):
    pm, names, cal = tiny_peft
    alpha = [0.3, 1.2, 0.7]
    pm.add_weighted_adapter(names, alpha, "cat_t", combination_type="cat")
    pm.add_weighted_adapter(names, alpha, "lin_t", combination_type="linear")
    worst_cat, worst_lin = 0.0, 0.0
    with torch.no_grad():
        for mod in _lora_modules(pm, "cat_t").values():
            ref = sum(a * mod.get_delta_weight(n) for a, n in zip(alpha, names))
            worst_cat = max(worst_cat, float((mod.get_delta_weight("cat_t") - ref).abs().max() / ref.abs().max()))
            worst_lin = max(worst_lin, float((mod.get_delta_weight("lin_t") - ref).abs().max() / ref.abs().max()))
    for n in ("cat_t", "lin_t"):
        pm.delete_adapter(n)
    pm.set_adapter(names[0])
    assert worst_cat < 1e-5
    assert worst_lin > 1e-2  # PEFT #1155: linear weights the factors, not the product


def test_merge_peft_on_a_tiny_random_transformer(tiny_peft):
    pm, names, cal = tiny_peft
    alpha, info = merge_peft(pm, names, cal, adapter_name="m_t", max_iter=4, log=True)
    assert alpha.shape == (3,) and np.all(alpha >= 0)
    assert pm.active_adapter == "m_t"
    assert info["history"] == sorted(info["history"])  # the true min-margin never decreases
    with torch.no_grad():
        for mod in _lora_modules(pm, "m_t").values():
            ref = sum(float(a) * mod.get_delta_weight(n) for a, n in zip(alpha, names))
            assert torch.allclose(mod.get_delta_weight("m_t"), ref, atol=1e-6)
    pm.set_adapter(names[0])
    pm.delete_adapter("m_t")


def test_linearised_mixing_equals_the_program_on_a_linear_head(theory):
    # a linear head is linear in α: one linearisation is exact, so merge_peft must find the program's α
    W0, D, fts, pt = theory["W0"], theory["deltas"], theory["fts"], theory["pt"]
    cfg = LoraConfig(r=4, lora_alpha=4, target_modules=["head"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm = get_peft_model(LinearHead(W0), cfg, adapter_name="t0")
        for t in (1, 2):
            pm.add_adapter(f"t{t}", cfg)
    lay = pm.base_model.model.head
    for t, Dt in enumerate(D):  # write each ΔW_t exactly as a rank-4 factorisation
        U, s, Vt = np.linalg.svd(Dt, full_matrices=False)
        lay.lora_B[f"t{t}"].weight.data = torch.tensor(U[:, :4] * s[:4])
        lay.lora_A[f"t{t}"].weight.data = torch.tensor(Vt[:4])
    cal = {f"t{t}": (torch.tensor(f.X), torch.tensor(f.y)) for t, f in enumerate(fts)}
    a_peft, info = merge_peft(pm, list(cal), cal, base_data=(torch.tensor(pt.X), torch.tensor(pt.y)),
                              max_iter=30, tol=1e-6, log=True)
    a_ref, ref = mixing_coefficients(W0, D, [(f.X, f.y) for f in fts], base_data=(pt.X, pt.y),
                                     method="program", log=True)
    assert info["min_margin"] == pytest.approx(ref["min_margin"], rel=1e-3)
    np.testing.assert_allclose(a_peft, a_ref, rtol=2e-2)


def test_merge_peft_bad_input(tiny_peft):
    pm, names, cal = tiny_peft
    with pytest.raises(ValueError, match="unknown adapters"):
        merge_peft(pm, ["a0", "nope"], {"a0": cal["a0"], "nope": cal["a1"]})
    with pytest.raises(ValueError, match="empty"):
        merge_peft(pm, names[:2], {"a0": cal["a0"], "a1": (cal["a1"][0][:0], cal["a1"][1][:0])})
    with pytest.raises(ValueError, match="outside the head"):
        merge_peft(pm, names[:2], {"a0": cal["a0"], "a1": (cal["a1"][0], cal["a1"][1] + 10)})
    with pytest.raises(ValueError, match="every adapter name"):
        merge_peft(pm, names[:2], {"a0": cal["a0"]})
    with pytest.raises(TypeError, match="PeftModel"):
        merge_peft(torch.nn.Linear(2, 2), names, cal)
    other = LoraConfig(r=2, lora_alpha=2, target_modules=["query"], init_lora_weights=False)
    pm.add_adapter("q_only", other)
    try:
        with pytest.raises(ValueError, match="adapters on different modules"):
            merge_peft(pm, ["a0", "q_only"], {"a0": cal["a0"], "q_only": cal["a1"]})
    finally:
        pm.set_adapter(names[0])
        pm.delete_adapter("q_only")
    assert "malora" not in pm.peft_config


def test_merge_peft_refuses_nan_adapter_weights(tiny_peft):
    pm, names, cal = tiny_peft
    mod = next(iter(_lora_modules(pm, names[1]).values()))
    keep = mod.lora_B[names[1]].weight.data.clone()
    mod.lora_B[names[1]].weight.data[0, 0] = float("nan")
    try:
        with pytest.raises(ValueError, match=f"adapter '{names[1]}' has NaN"):
            merge_peft(pm, names, cal)
    finally:
        mod.lora_B[names[1]].weight.data = keep
    assert "malora" not in pm.peft_config
