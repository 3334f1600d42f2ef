import pytest

pytest.importorskip("transformers")
from paperworks.lm.tiny import ARCHITECTURES  # noqa: E402

CASES = [*ARCHITECTURES, "gpt_neox_sequential"]


def build(tiny, case):
    if case == "gpt_neox_sequential":
        return tiny("gpt_neox", use_parallel_residual=False)
    return tiny(case)


@pytest.mark.parametrize("case", CASES)
def test_self_check_and_residual_reconstruction(torch, tiny, pairs, case):
    from paperworks.lm import ModelAccess, residual_after

    model = build(tiny, case)
    acc = ModelAccess(model)
    errors = acc.self_check()
    assert max(errors.values()) < 1e-4
    assert acc.modules == ["attn0", "mlp0", "attn1", "mlp1"]
    assert acc.parallel_residual == (case in ("gpt_neox", "gptj", "phi"))
    ids = pairs[0]
    logits, cache = acc.run(ids, cache=acc.senders, last_only=False)
    # independent reference: the model's own hidden states and logits, without our hooks
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    torch.testing.assert_close(residual_after(cache, acc, "mlp0"), out.hidden_states[1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(acc.unembed(residual_after(cache, acc, "mlp1")), out.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(logits, out.logits, atol=1e-5, rtol=1e-5)
    assert ("attn0", "mlp0") in [(u, v) for u in acc.senders for v in acc.receivers if acc.is_edge(u, v)] \
        or acc.parallel_residual


@pytest.mark.parametrize("case", [c for c in CASES if c != "gemma2"])
def test_head_writes_sum_to_the_attention_output(torch, tiny, pairs, case):
    from paperworks.lm import ModelAccess

    acc = ModelAccess(build(tiny, case))
    assert acc.head_writes_additive
    _, c = acc.run(pairs[0], cache=["attn1", "attn1.z", *acc.heads(1)])
    total = sum(acc.head_write(1, c["attn1.z"], h) for h in range(acc.n_heads))
    bias = acc.blocks[1].out_proj(torch.zeros_like(c["attn1.z"]))
    torch.testing.assert_close(total + bias, c["attn1"], atol=1e-5, rtol=1e-5)
    hd = c["attn1.z"].shape[-1] // acc.n_heads
    torch.testing.assert_close(c["attn1.z[2]"], c["attn1.z"][..., 2 * hd:3 * hd])


def test_gemma2_head_writes_refused_and_old_lookup_caught(torch, tiny, pairs):
    """Gemma-2 hides post-norms behind attention and MLP: hooking the attention module itself (what
    factlocus's lookup did) gives a wrong residual stream, and the self-check refuses it."""
    import dataclasses

    from paperworks.lm import ModelAccess, UnsupportedModelError

    model = tiny("gemma2")
    acc = ModelAccess(model)
    assert not acc.head_writes_additive
    with pytest.raises(ValueError, match="norm after"):
        acc.head_write(0, torch.zeros(1, 1, 32), 0)
    wrong = ModelAccess(model, check=False)
    wrong.blocks = [dataclasses.replace(b, attn_write=b.attn, mlp_write=b.mlp, mlp_norm=model.model.layers[b.index]
                                        .post_attention_layernorm) for b in wrong.blocks]
    with pytest.raises(UnsupportedModelError, match="gemma2.*self-check"):
        wrong.self_check()


def test_unsupported_architectures_are_refused_by_name(torch, tok):
    from transformers import BloomConfig, BloomForCausalLM, OPTConfig, OPTForCausalLM

    from paperworks.lm import ModelAccess, UnsupportedModelError

    torch.manual_seed(0)
    bloom = BloomForCausalLM(BloomConfig(vocab_size=len(tok), hidden_size=32, n_layer=2, n_head=4)).eval()
    with pytest.raises(UnsupportedModelError, match="bloom.*self-check"):
        ModelAccess(bloom)
    post = OPTForCausalLM(OPTConfig(vocab_size=len(tok), hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                                    num_attention_heads=4, word_embed_proj_dim=32, do_layer_norm_before=False))
    with pytest.raises(UnsupportedModelError, match="post-norm"):
        ModelAccess(post)
    with pytest.raises(TypeError, match="model"):
        ModelAccess(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("arch", ["gptj", "phi", "gpt_neox"])
def test_parallel_blocks_edges_reach_one_branch_only(torch, tiny, pairs, arch):
    """One norm feeds both branches of GPT-J/Phi blocks: a delta for attn0 must not reach mlp0."""
    from paperworks.lm import ModelAccess

    acc = ModelAccess(tiny(arch))
    assert not acc.is_edge("attn0", "mlp0") and acc.is_edge("attn0", "mlp1")
    ids = pairs[0]
    rows = torch.arange(3)
    delta = torch.randn(3, ids.shape[1], 32, generator=torch.Generator().manual_seed(1))
    _, base = acc.run(ids, cache=["attn0", "mlp0"])
    _, to_attn = acc.run(ids, cache=["attn0", "mlp0"], add={"attn0": [(rows, delta)]})
    _, to_mlp = acc.run(ids, cache=["attn0", "mlp0"], add={"mlp0": [(rows, delta)]})
    torch.testing.assert_close(to_attn["mlp0"], base["mlp0"])
    torch.testing.assert_close(to_mlp["attn0"], base["attn0"])
    assert (to_attn["attn0"][:3] - base["attn0"][:3]).abs().max() > 1e-3
    torch.testing.assert_close(to_attn["attn0"][3:], base["attn0"][3:])  # other rows untouched
    assert (to_mlp["mlp0"][:3] - base["mlp0"][:3]).abs().max() > 1e-3
    # the receiver reads norm(x + delta): the same as running attn on the shifted residual by hand
    b = acc.blocks[0]
    if b.shared_norm:
        _, c = acc.run(ids, cache=["emb"])
        x = b.attn_norm(c["emb"][:3] + delta)
        ref = b.mlp(x)
        torch.testing.assert_close(to_mlp["mlp0"][:3], ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "gemma2"])
def test_gqa_kv_head_patch_touches_only_its_query_group(torch, tiny, pairs, arch):
    from paperworks.lm import ModelAccess

    acc = ModelAccess(tiny(arch))
    assert (acc.n_heads, acc.n_kv_heads) == (4, 2)
    assert acc.query_heads(0) == [0, 1] and acc.kv_head(3) == 1
    ids = pairs[0]
    rows = torch.arange(len(ids))
    _, c = acc.run(ids, cache=["attn0.v[0]", "attn0.z"])
    _, p = acc.run(ids, cache=["attn0.z"], replace={"attn0.v[0]": (rows, c["attn0.v[0]"] + 1.0)})
    hd = c["attn0.v[0]"].shape[-1]
    dz = (p["attn0.z"] - c["attn0.z"]).abs().view(*ids.shape, 4, hd).amax(dim=(0, 1, 3))
    assert (dz[:2] > 0.1).all() and (dz[2:] < 1e-6).all()


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_per_head_replacement_is_batched_per_row(torch, tiny, pairs, arch):
    """Heads of one module replaced on different rows in one pass equal one pass per head."""
    from paperworks.lm import ModelAccess

    acc = ModelAccess(tiny(arch))
    clean, corrupt = pairs[0], pairs[1]
    n = len(clean)
    heads = acc.heads(1)
    _, cc = acc.run(clean, cache=heads)
    rep = {h: (torch.arange(k * n, (k + 1) * n), cc[h]) for k, h in enumerate(heads)}
    batched, _ = acc.run(corrupt.repeat(len(heads), 1), replace=rep)
    for k, h in enumerate(heads):
        one, c1 = acc.run(corrupt, replace={h: (torch.arange(n), cc[h])}, cache=["attn1.z"])
        torch.testing.assert_close(batched[k * n:(k + 1) * n], one, atol=1e-5, rtol=1e-5)
        hd = c1["attn1.z"].shape[-1] // acc.n_heads
        torch.testing.assert_close(c1["attn1.z"][..., k * hd:(k + 1) * hd], cc[h])


def test_bad_input_names_the_argument(torch, tiny, pairs):
    from paperworks.lm import ModelAccess

    acc = ModelAccess(tiny("llama"))
    gpt2 = ModelAccess(tiny("gpt2"))
    ids = pairs[0]
    with pytest.raises(ValueError, match="input_ids: token id 9999 is outside the vocabulary"):
        acc.run(torch.full((1, 3), 9999))
    with pytest.raises(ValueError, match="input_ids.*-1"):
        acc.run(torch.full((1, 3), -1))
    with pytest.raises(ValueError, match="context"):
        acc.run(torch.zeros(1, acc.n_ctx + 1, dtype=torch.long))
    with pytest.raises(TypeError, match="input_ids"):
        acc.run(ids.float())
    for bad in ("mlp7", "attn0.z[4]", "attn0.k[2]", "mlp0.q", "block0", "attn0.w"):
        with pytest.raises(ValueError, match="site"):
            acc.run(ids, cache=[bad])
    with pytest.raises(ValueError, match="fused"):
        gpt2.run(ids, cache=["attn0.k"])
    with pytest.raises(ValueError, match="receiver"):
        acc.run(ids, add={"attn0.z": []})
    assert acc.order("attn1.z[3]") == acc.order("attn1")
