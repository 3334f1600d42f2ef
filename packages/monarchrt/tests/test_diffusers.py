import ast
from pathlib import Path

import pytest
import torch
from monarchrt import monarch_attention

diffusers = pytest.importorskip("diffusers")
from diffusers.models.attention_processor import Attention, AttnProcessor2_0  # noqa: E402
from monarchrt.integrations.diffusers import MonarchAttnProcessor, set_monarch_processor  # noqa: E402

LAYOUT = (2, 4, 4)


def tiny_attention(**kw):
    torch.manual_seed(0)
    return Attention(query_dim=32, heads=2, dim_head=16, bias=True, **kw).eval()


def test_full_tile_monarch_processor_equals_the_default_processor(gen):
    attn = tiny_attention(qk_norm="layer_norm")
    x = torch.randn(2, 32, 32, generator=gen)
    attn.set_processor(AttnProcessor2_0())
    with torch.no_grad():
        ref = attn(x)
        attn.set_processor(MonarchAttnProcessor(LAYOUT, block=LAYOUT))  # one block = exact softmax attention
        ours = attn(x)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)


def test_monarch_processor_runs_the_monarch_op_between_the_projections(gen):
    attn = tiny_attention()
    x = torch.randn(2, 32, 32, generator=gen)
    attn.set_processor(MonarchAttnProcessor(LAYOUT, num_iters=2, causal_frames=True))
    with torch.no_grad():
        out = attn(x)
        q, k, v = (p(x).view(2, 32, 2, 16).transpose(1, 2) for p in (attn.to_q, attn.to_k, attn.to_v))
        o = monarch_attention(q, k, v, LAYOUT, num_iters=2, causal_frames=True)
        expect = attn.to_out[0](o.transpose(1, 2).reshape(2, 32, 32))
        attn.set_processor(AttnProcessor2_0())
        dense = attn(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out, expect, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(out, dense, atol=1e-3)  # frame-causal Monarch is not dense attention


def test_cross_attention_stays_dense_and_bad_lengths_are_rejected(gen):
    model = torch.nn.ModuleList([tiny_attention(), tiny_attention(cross_attention_dim=8)])
    assert set_monarch_processor(model, LAYOUT) == 1
    x, ctx = torch.randn(1, 32, 32, generator=gen), torch.randn(1, 5, 8, generator=gen)
    with torch.no_grad():
        ours = model[1](x, encoder_hidden_states=ctx)
        model[1].set_processor(AttnProcessor2_0())
        torch.testing.assert_close(ours, model[1](x, encoder_hidden_states=ctx), atol=1e-5, rtol=1e-5)
        with pytest.raises(ValueError, match="sequence length"):
            model[0](torch.randn(1, 30, 32))
        with pytest.raises(ValueError, match="attention_mask"):
            model[0](x, attention_mask=torch.ones(1, 32))


def test_monarchrt_never_imports_diffusers_at_module_level():
    import monarchrt

    root = Path(monarchrt.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:  # module-level statements only
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "diffusers" for n in names), f"{path} imports diffusers"
