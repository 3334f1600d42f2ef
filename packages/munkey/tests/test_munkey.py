import copy
import inspect

import numpy as np
import pytest
import torch
from munkey import MUNKEY, DeletionRecord, ViT


def test_forget_takes_only_ids_and_changes_no_weight(trained):
    mk, _ = trained
    assert list(inspect.signature(MUNKEY.forget).parameters) == ["self", "ids"]
    m = copy.deepcopy(mk)
    before = {k: v.clone() for k, v in m.named_parameters() if not k.startswith("mem_")}
    rec = m.forget(list(range(10)))
    assert isinstance(rec, DeletionRecord) and rec.rows_before - rec.rows_after == 10
    for k, v in m.named_parameters():
        if not k.startswith("mem_"):
            assert torch.equal(v, before[k]), k


def test_rows_are_removed_from_state_dict_not_masked(trained):
    mk, _ = trained
    m = copy.deepcopy(mk)
    n = len(m)
    m.forget([3, 5, 8])
    sd = m.state_dict()
    assert sd["mem_keys"].shape[0] == sd["mem_values"].shape[0] == sd["mem_ids"].shape[0] == n - 3
    assert not set(sd["mem_ids"].tolist()) & {3, 5, 8}
    assert len(m.audit_log) == 1 and m.audit_log[0].ids == (3, 5, 8)


def test_deleted_ids_never_retrieved_even_for_near_duplicates(trained, split):
    mk, _ = trained
    m = copy.deepcopy(mk)
    gone = torch.arange(10)
    x = split.x_train[:10]
    # before: each image retrieves itself first
    pos, attn, _ = m.retrieve(x)
    assert all(int(i) in m.mem_ids[p].tolist() for i, p in zip(gone, pos, strict=True))
    m.forget(gone.tolist())
    g = torch.Generator().manual_seed(1)
    for probe in (x, x + 0.03 * torch.randn(x.shape, generator=g), x.flip(-1)):
        pos, _, _ = m.retrieve(probe)
        assert not torch.isin(m.mem_ids[pos], gone).any()


def test_untouched_samples_keep_bit_identical_outputs(trained, split):
    mk, _ = trained
    m = copy.deepcopy(mk)
    x = split.x_test
    with torch.no_grad():
        before, pos = m(x), m.retrieve(x)[0]
    gone = torch.arange(0, 210, 7)
    untouched = ~torch.isin(m.mem_ids[pos], gone).any(1)
    m.forget(gone.tolist())
    with torch.no_grad():
        after = m(x)
    assert untouched.sum() > 10 and (~untouched).sum() > 0
    assert torch.equal(after[untouched], before[untouched])


def test_retrieval_matches_brute_force_and_chunking(trained, split):
    mk, _ = trained
    m = copy.deepcopy(mk)
    x = split.x_test[:20]
    pos, attn, q = m.retrieve(x)
    sims = (q.detach().numpy() @ m.mem_keys.numpy().T)
    for b in range(len(x)):
        want = set(np.argsort(-sims[b])[: m.topk].tolist())
        assert set(pos[b].tolist()) == want
        s = sims[b, pos[b].numpy()] / float(m.log_tau.detach().exp())
        np.testing.assert_allclose(attn[b].detach().numpy(), np.exp(s - s.max()) / np.exp(s - s.max()).sum(),
                                   rtol=1e-5, atol=1e-6)
    m.chunk = 7  # many small blocks: the same top-k
    pos2, _, _ = m.retrieve(x)
    assert torch.equal(pos, pos2)


def test_save_load_is_self_contained_and_keeps_deleted_rows_out(trained, split, tmp_path, small_cfg):
    mk, _ = trained
    m = copy.deepcopy(mk)
    m.forget([1, 2, 3])
    p = tmp_path / "m.pt"
    m.save(p)
    blob = torch.load(p, weights_only=True)
    assert not set(blob["state_dict"]["mem_ids"].tolist()) & {1, 2, 3}
    r = MUNKEY.load(p)
    assert len(r) == len(m) and r.audit_log[0].ids == (1, 2, 3)
    with torch.no_grad():
        assert torch.equal(r(split.x_test), m(split.x_test))
    with pytest.raises(ValueError, match="already deleted: \\[2\\]"):
        r.forget([2])
    # a plain load_state_dict into a fresh (empty-memory) model resizes the table
    fresh = MUNKEY(**small_cfg, key_dim=16, topk=8)
    fresh.load_state_dict(m.state_dict())
    assert len(fresh) == len(m)
    with pytest.raises(ValueError, match="not a saved munkey.ViT"):
        ViT.load(p)


@pytest.mark.parametrize(("ids", "err", "match"), [
    ([], ValueError, "empty forget set"),
    ([1, 1], ValueError, "duplicate ids: \\[1\\]"),
    ([99999], ValueError, "unknown .*99999"),
    ([1.5], TypeError, "integers"),
    ("3", TypeError, "integers"),
])
def test_forget_bad_ids(trained, ids, err, match):
    m = copy.deepcopy(trained[0])
    with pytest.raises(err, match=match):
        m.forget(ids)


def test_bad_images_and_memorize_errors(trained, small_cfg):
    m = copy.deepcopy(trained[0])
    with pytest.raises(ValueError, match="shape"):
        m(torch.zeros(2, 8, 8))
    with pytest.raises(ValueError, match="channels 1"):
        m(torch.zeros(2, 3, 8, 8))
    bad = torch.zeros(2, 1, 8, 8)
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        m(bad)
    with pytest.raises(ValueError, match="already in memory"):
        m.memorize(torch.zeros(1, 1, 8, 8), [0])
    with pytest.raises(ValueError, match="duplicate"):
        m.memorize(torch.zeros(2, 1, 8, 8), [5000, 5000])
    with pytest.raises(ValueError, match="memory_dropout"):
        MUNKEY(**small_cfg, memory_dropout=1.0)
    with pytest.raises(ValueError, match="divisible"):
        ViT(**{**small_cfg, "patch_size": 3})


def test_memory_pathway_can_be_cut(trained, split):
    mk, vt = trained
    with torch.no_grad():
        full, cut = mk(split.x_test), mk(split.x_test, use_memory=False)
    assert not torch.equal(full, cut)
    assert vt.n_backbone_parameters() == sum(p.numel() for p in vt.parameters())
