"""Cross-check against TransformerLens (v3 TransformerBridge: raw HF numerics), an independent hook
implementation, on tiny random checkpoints saved locally and booted from their folder offline.
Skipped where transformer-lens is not installed (it is not a dependency of paperworks[lm])."""

import os

import pytest

pytest.importorskip("transformers")
tl = pytest.importorskip("transformer_lens.model_bridge")

ARCHS = ["gpt2", "llama", "gpt_neox", "gemma2", "opt", "phi"]


@pytest.fixture(scope="module")
def bridges(tok, tiny, tmp_path_factory):
    from paperworks.lm import save_local

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = tmp_path_factory.mktemp("tl")
    return {a: tl.TransformerBridge.boot_transformers(str(save_local(root / a, tiny(a), tok)), device="cpu")
            for a in ARCHS}


def _tl_ld(bridge, ids, a, b, hooks):
    import torch

    from paperworks.lm import logit_diff

    with torch.no_grad():
        logits = bridge.run_with_hooks(ids, fwd_hooks=hooks)[:, -1].float()
    return logit_diff(logits, a, b)


@pytest.mark.parametrize("arch", ARCHS)
def test_cached_sites_equal_transformer_lens(torch, tiny, pairs, bridges, arch):
    from paperworks.lm import ModelAccess, residual_after

    acc, br = ModelAccess(tiny(arch)), bridges[arch]
    ids = pairs[0]
    with torch.no_grad():
        _, tc = br.run_with_cache(ids)
    _, c = acc.run(ids, cache=[*acc.senders, "attn1.z"], last_only=False)
    for i in range(2):
        torch.testing.assert_close(c[f"attn{i}"], tc[f"blocks.{i}.hook_attn_out"], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(c[f"mlp{i}"], tc[f"blocks.{i}.hook_mlp_out"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(residual_after(c, acc, "mlp0"), tc["blocks.1.hook_resid_pre"], atol=1e-5, rtol=1e-5)
    z = tc["blocks.1.attn.hook_z"]
    torch.testing.assert_close(c["attn1.z"], z.reshape(*z.shape[:2], -1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_activation_and_head_patching_equal_transformer_lens(torch, tiny, pairs, bridges, arch):
    from paperworks.lm import ModelAccess, patch

    acc, br = ModelAccess(tiny(arch)), bridges[arch]
    clean, corrupt, a, b = pairs
    ours = patch(acc, clean, corrupt, a, b, sites=["attn0", "mlp0", "mlp1", "attn1.z[1]", "attn1.z[3]"])["effect"]
    with torch.no_grad():
        _, tc = br.run_with_cache(clean)
    ld_c, ld_x = _tl_ld(br, clean, a, b, []), _tl_ld(br, corrupt, a, b, [])
    refs = {"attn0": ("blocks.0.hook_attn_out", None), "mlp0": ("blocks.0.hook_mlp_out", None),
            "mlp1": ("blocks.1.hook_mlp_out", None), "attn1.z[1]": ("blocks.1.attn.hook_z", 1),
            "attn1.z[3]": ("blocks.1.attn.hook_z", 3)}
    for site, (name, head) in refs.items():
        def hook(x, hook, name=name, head=head):
            if head is None:
                return tc[name]
            x = x.clone()
            x[:, :, head] = tc[name][:, :, head]
            return x
        ld_p = _tl_ld(br, corrupt, a, b, [(name, hook)])
        ref = float((ld_p - ld_x).sum() / (ld_c - ld_x).sum())
        assert ours[site] == pytest.approx(ref, abs=1e-4), site


@pytest.mark.parametrize("arch", [a for a in ARCHS if a != "phi"])  # Phi's one shared norm has no TL ln2 hook
def test_path_patching_equals_transformer_lens(torch, tiny, pairs, bridges, arch):
    from paperworks.lm import ModelAccess, path_patch

    acc, br = ModelAccess(tiny(arch)), bridges[arch]
    clean, corrupt, a, b = pairs
    edges = [e for e in [("emb", "attn1"), ("attn0", "mlp0"), ("attn0", "mlp1"), ("mlp0", "attn1"),
                         ("attn1", "logits"), ("mlp0", "logits")] if acc.is_edge(*e)]
    ours = path_patch(acc, clean, corrupt, a, b, edges=edges)["effect"]
    with torch.no_grad():
        _, tc = br.run_with_cache(clean)
        _, tx = br.run_with_cache(corrupt)
    ld_c, ld_x = _tl_ld(br, clean, a, b, []), _tl_ld(br, corrupt, a, b, [])
    send = {"emb": "blocks.0.hook_resid_pre", "attn0": "blocks.0.hook_attn_out", "mlp0": "blocks.0.hook_mlp_out",
            "attn1": "blocks.1.hook_attn_out"}
    recv = {"attn1": "blocks.1.ln1.hook_in", "mlp0": "blocks.0.ln2.hook_in", "mlp1": "blocks.1.ln2.hook_in",
            "logits": "ln_final.hook_in"}
    for u, v in edges:
        delta = tc[send[u]] - tx[send[u]]
        ld_p = _tl_ld(br, corrupt, a, b, [(recv[v], lambda x, hook, d=delta: x + d)])
        ref = float((ld_p - ld_x).sum() / (ld_c - ld_x).sum())
        assert ours[(u, v)] == pytest.approx(ref, abs=1e-4), (u, v)
