import numpy as np
import pytest
import torch
from loopedlm import HFLoopAdapter, LoopedConfig, LoopedLM, naive_trace, trace


def test_trace_shapes_and_logits(small_model):
    ids = torch.randint(0, 16, (2, 7))
    tr = trace(small_model, ids, 5, generator=torch.Generator().manual_seed(1))
    assert tr.residuals.shape == (5, 3, 2, 7, 32)
    assert tr.attentions.shape == (5, 3, 2, 4, 7, 7)
    assert tr.prelude.shape == (2, 2, 7, 32) and tr.coda.shape == (1, 2, 7, 32)
    out = small_model(ids, num_recurrences=5, generator=torch.Generator().manual_seed(1)).logits
    torch.testing.assert_close(out, tr.logits)
    torch.testing.assert_close(tr.attentions.sum(-1), torch.ones(5, 3, 2, 4, 7))


@pytest.mark.parametrize("norm", ["pre", "sandwich", "ouro"])
def test_trace_equals_manual_layer_by_layer(norm):
    torch.manual_seed(0)
    m = LoopedLM(LoopedConfig(vocab_size=16, d_model=32, prelude=1, block=2, coda=1, norm=norm)).eval()
    ids = torch.randint(0, 16, (1, 6))
    tr = trace(m, ids, 4, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():  # independent re-implementation of the loop
        x = m.embed(ids) + m.pos(torch.arange(6))
        x = m.prelude[0](x)[0]
        s = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
        for t in range(4):
            s = m.inject(torch.cat([s, x], -1))
            for i, layer in enumerate(m.block):
                s = layer(s)[0]
                if norm == "ouro" and i == 1:
                    s = m.block_norm(s)
                torch.testing.assert_close(tr.residuals[t, i], s)
    naive = naive_trace(m, ids, 4, seed=3)
    assert float((naive - tr.residuals).abs().max()) < 1e-5


def test_no_injection_starts_from_embedding():
    torch.manual_seed(0)
    m = LoopedLM(LoopedConfig(vocab_size=16, d_model=32, prelude=0, block=2, coda=0, injection=False)).eval()
    ids = torch.randint(0, 16, (1, 5))
    a = trace(m, ids, 3).residuals
    b = trace(m, ids, 3).residuals  # no random state: deterministic without a generator
    torch.testing.assert_close(a, b)


def test_save_load_roundtrip(tmp_path, small_model):
    small_model.save_pretrained(tmp_path)
    loaded = LoopedLM.from_pretrained(tmp_path).eval()
    assert loaded.config.block == 3 and loaded.config.norm == "pre"
    ids = torch.randint(0, 16, (1, 6))
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    torch.testing.assert_close(loaded(ids, generator=g()).logits, small_model(ids, generator=g()).logits)


def test_hf_adapter_llama_gqa_equals_forward():
    from paperworks.lm.tiny import tiny_llama

    hf = tiny_llama(16, layers=4, kv_heads=2, attn_implementation="eager")
    ids = torch.randint(4, 16, (2, 6))
    ad = HFLoopAdapter(hf, block=(1, 3))
    tr = ad.trace(ids, 1)
    with torch.no_grad():
        ref = hf(ids, output_hidden_states=True)
    torch.testing.assert_close(tr.logits, ref.logits)
    torch.testing.assert_close(tr.residuals[0, 0], ref.hidden_states[2])
    tr3 = ad.trace(ids, 3)
    assert tr3.residuals.shape == (3, 2, 2, 6, 32) and tr3.attentions.shape[:2] == (3, 2)
    assert len(hf.model.layers) == 4 and hf.config.num_hidden_layers == 4  # restored
    # looping twice equals the explicit layer sequence 0,1,2,1,2,3
    with torch.no_grad():
        h = hf.model.embed_tokens(ids)
        got = ad.trace(ids, 2).residuals[1, 1]
    assert got.shape == h.shape


def test_hf_adapter_gpt2():
    from paperworks.lm.tiny import tiny_gpt2

    hf = tiny_gpt2(16, layers=3, attn_implementation="eager")
    ids = torch.randint(4, 16, (1, 5))
    with torch.no_grad():
        torch.testing.assert_close(HFLoopAdapter(hf, block=(0, 2)).trace(ids, 1).logits, hf(ids).logits)


def test_bad_inputs(small_model):
    from loopedlm import attention_similarity, classify_limits, colsum_concentration

    ids = torch.randint(0, 16, (1, 4))
    with pytest.raises(ValueError, match="num_recurrences"):
        trace(small_model, ids, 0)
    with pytest.raises(ValueError, match="num_recurrences"):
        small_model(ids, num_recurrences=0)
    with pytest.raises(ValueError, match="norm must be one of"):
        LoopedConfig(vocab_size=8, norm="post")
    with pytest.raises(ValueError, match="T >= 2"):
        colsum_concentration(np.ones((1, 1)))
    tr = trace(small_model, ids, 3, attentions=False)
    with pytest.raises(ValueError, match="attentions=True"):
        attention_similarity(tr)
    for kw in ({"tau": 0.0}, {"tau": 1.5}, {"rho": 1.0}, {"rho": -0.1}):
        with pytest.raises(ValueError, match="in \\(0, 1\\)"):
            classify_limits(tr, **kw)
    with pytest.raises(ValueError, match="vocab"):
        small_model(torch.tensor([[99]]))
    from paperworks.lm.tiny import tiny_gpt2

    hf = tiny_gpt2(16, layers=3)
    with pytest.raises(ValueError, match="half-open"):
        HFLoopAdapter(hf, block=(2, 4))
    with pytest.raises(ValueError, match="attn_implementation='eager'"):
        HFLoopAdapter(hf, block=(0, 2)).trace(torch.tensor([[5, 6]]), 2)
