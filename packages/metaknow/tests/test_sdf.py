import numpy as np
import pytest
import torch
from metaknow import count_tokens, document_losses, load_sdf, matched_control, save_sdf, train_sdf
from metaknow.sdf import base_weights_equal, encode_document, pack_documents
from transformers import GPT2Config, GPT2LMHeadModel


def test_matched_control_token_parity_and_no_reuse(tok, docs):
    pool = [f"the river {' '.join(['mill'] * k)}" for k in range(1, 40)] * 3
    ctl = matched_control(docs, pool, tok, tol=0.01)
    a, b = count_tokens(docs, tok), count_tokens(ctl, tok)
    assert abs(a - b) <= 0.01 * a
    assert a == sum(len(tok(d, add_special_tokens=False)["input_ids"]) + len(tok("<doc>", add_special_tokens=False)["input_ids"]) + 1
                    for d in docs)


def test_pool_too_small_is_an_error(tok, docs):
    with pytest.raises(ValueError, match="pool: too small"):
        matched_control(docs, ["the river"], tok)


def test_prefix_labels_are_masked(tok):
    e = encode_document("w1 w2 w3", tok, doc_prefix="<doc>")
    n = len(tok("<doc>", add_special_tokens=False)["input_ids"])
    assert n >= 1 and e.labels[:n] == [-100] * n and e.labels[n:] == e.ids[n:]
    assert e.ids[-1] == tok.eos_token_id


def test_packed_equals_unpacked_per_document_loss_and_hf_reference(tok, docs, gpt2):
    packed = document_losses(gpt2, tok, docs, pack=True, block=48)
    alone = document_losses(gpt2, tok, docs, pack=False)
    np.testing.assert_allclose(packed, alone, atol=1e-5)
    # independent reference: the model's own loss with labels, one document at a time
    for d, v in zip(docs[:4], alone[:4]):
        e = encode_document(d, tok)
        ids = torch.tensor([e.ids])
        with torch.no_grad():
            ref = gpt2(input_ids=ids, labels=torch.tensor([e.labels])).loss.item()
        assert v == pytest.approx(ref, rel=1e-5)
    ids, labels, mask, pos, doc = pack_documents([encode_document(d, tok) for d in docs], 48)
    assert (pos[doc >= 0] >= 0).all() and not mask[0, 0, 0, 1]


def test_lora_lowers_loss_and_leaves_base_bit_identical(tok, docs, tmp_path):
    base = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_positions=128))
    before = {k: v.clone() for k, v in base.state_dict().items()}
    l0 = document_losses(base, tok, docs).mean()
    pm, log = train_sdf(base, tok, docs * 10, lora_config={"r": 8, "lora_alpha": 16}, lr=3e-3, batch_tokens=48,
                        max_len=48, return_log=True)
    assert len(log) >= 20
    assert document_losses(pm, tok, docs).mean() < l0 - 0.1
    assert base_weights_equal(pm, before)
    before["transformer.h.0.attn.c_attn.weight"] = before["transformer.h.0.attn.c_attn.weight"] + 1e-3
    assert not base_weights_equal(pm, before)
    # self-contained save/load: merged weights reload without peft or the base
    save_sdf(tmp_path / "m", pm, tok)
    m2, t2 = load_sdf(tmp_path / "m")
    ids = torch.tensor([encode_document(docs[0], tok).ids])
    with torch.no_grad():
        torch.testing.assert_close(m2(input_ids=ids).logits, pm(input_ids=ids).logits, atol=1e-5, rtol=1e-5)
    assert t2.eos_token_id == tok.eos_token_id


def test_bad_inputs(tok, docs, gpt2):
    with pytest.raises(ValueError, match="target_modules"):
        train_sdf(gpt2, tok, docs, lora_config={"target_modules": ["q_proj"]})
    with pytest.raises(ValueError, match="lint issue"):
        train_sdf(gpt2, tok, docs + ["Assistant: I can't help with that."])
    with pytest.raises(ValueError, match="lr"):
        train_sdf(gpt2, tok, docs, lr=float("nan"))
