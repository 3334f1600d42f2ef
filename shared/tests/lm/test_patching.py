import pytest

pytest.importorskip("transformers")


@pytest.mark.parametrize("arch", ["gpt2", "llama", "phi", "gemma2"])
def test_batched_patching_equals_one_pass_per_site(torch, tiny, pairs, arch):
    from paperworks.lm import ModelAccess, logit_diff, patch

    acc = ModelAccess(tiny(arch))
    clean, corrupt, a, b = pairs
    sites = ["emb", *acc.modules, "attn1.z[0]", "attn1.z[3]"]
    out = patch(acc, clean, corrupt, a, b, sites=sites, chunk=4)
    ld_c, ld_x = logit_diff(acc.run(clean)[0], a, b), logit_diff(acc.run(corrupt)[0], a, b)
    for s in sites:  # reference: one unbatched pass per site
        _, c = acc.run(clean, cache=[s])
        lp, _ = acc.run(corrupt, replace={s: (torch.arange(len(clean)), c[s])})
        ref = float((logit_diff(lp, a, b) - ld_x).sum() / (ld_c - ld_x).sum())
        assert out["effect"][s] == pytest.approx(ref, abs=1e-5)
    # the clean embedding at every position makes the run the clean run: recovery 1, either way round
    assert out["effect"]["emb"] == pytest.approx(1.0, abs=1e-5)
    noise = patch(acc, clean, corrupt, a, b, sites=["emb", "mlp1"], mode="noise")
    assert noise["effect"]["emb"] == pytest.approx(1.0, abs=1e-5)
    assert out["clean_ld"] != pytest.approx(out["corrupt_ld"])


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gptj", "opt"])
def test_path_patching_into_logits_matches_a_hand_computation(torch, tiny, pairs, arch):
    """Edge u -> logits changes only the final norm's input: unembed(resid_x + clean_u - cf_u)."""
    from paperworks.lm import ModelAccess, logit_diff, path_patch, residual_after

    acc = ModelAccess(tiny(arch))
    clean, corrupt, a, b = pairs
    edges = [("emb", "logits"), ("attn0", "logits"), ("mlp1", "logits"), ("attn1.z[1]", "logits")]
    out = path_patch(acc, clean, corrupt, a, b, edges=edges)
    lc, cc = acc.run(clean, cache=[*acc.senders, "attn1.z"])
    lx, cx = acc.run(corrupt, cache=[*acc.senders, "attn1.z"])
    den = (logit_diff(lc, a, b) - logit_diff(lx, a, b)).sum()
    resid_x = residual_after(cx, acc, "mlp1")
    for u, _ in edges:
        if u.endswith("]"):
            d = acc.head_write(1, cc["attn1.z"], 1) - acc.head_write(1, cx["attn1.z"], 1)
        else:
            d = cc[u] - cx[u]
        lp = acc.unembed(resid_x + d)[:, -1]
        ref = float((logit_diff(lp, a, b) - logit_diff(lx, a, b)).sum() / den)
        assert out["effect"][(u, "logits")] == pytest.approx(ref, abs=1e-4)


def test_path_patching_all_edges_and_bad_edges(torch, tiny, pairs):
    from paperworks.lm import ModelAccess, all_edges, path_patch

    acc = ModelAccess(tiny("phi"))
    clean, corrupt, a, b = pairs
    edges = all_edges(acc)
    assert ("attn0", "mlp0") not in edges and ("attn0", "mlp1") in edges
    assert len(all_edges(acc, heads=True)) > len(edges)
    out = path_patch(acc, clean, corrupt, a, b)
    assert set(out["effect"]) == set(edges)
    with pytest.raises(ValueError, match="edges: empty"):
        path_patch(acc, clean, corrupt, a, b, edges=[])
    with pytest.raises(ValueError, match="does not read"):
        path_patch(acc, clean, corrupt, a, b, edges=[("attn0", "mlp0")])
    with pytest.raises(ValueError, match="forward"):
        path_patch(acc, clean, corrupt, a, b, edges=[("mlp1", "attn0")])
    with pytest.raises(ValueError, match="site"):
        path_patch(acc, clean, corrupt, a, b, edges=[("mlp9", "logits")])
    with pytest.raises(TypeError, match="pair"):
        path_patch(acc, clean, corrupt, a, b, edges=["mlp0"])
    gemma = ModelAccess(tiny("gemma2"))
    with pytest.raises(ValueError, match="norm after"):
        path_patch(gemma, clean, corrupt, a, b, edges=[("attn0.z[0]", "logits")])


def test_patching_bad_input(torch, tiny, pairs):
    from paperworks.lm import ModelAccess, patch

    acc = ModelAccess(tiny("gpt2"))
    clean, corrupt, a, b = pairs
    with pytest.raises(ValueError, match="corrupt_ids"):
        patch(acc, clean, corrupt[:, :3], a, b)
    with pytest.raises(ValueError, match="clean_ids: token id"):
        patch(acc, clean + 1000, corrupt, a, b)
    with pytest.raises(ValueError, match="foils"):
        patch(acc, clean, corrupt, a, a)
    with pytest.raises(ValueError, match="answers"):
        patch(acc, clean, corrupt, a[:2], b)
    with pytest.raises(ValueError, match="sites: empty"):
        patch(acc, clean, corrupt, a, b, sites=[])
    with pytest.raises(ValueError, match="mode"):
        patch(acc, clean, corrupt, a, b, mode="both")
