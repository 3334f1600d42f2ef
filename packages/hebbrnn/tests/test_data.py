import numpy as np
import pytest
import torch
from hebbrnn import HierarchicalRecall


def test_single_cue_by_default():
    task = HierarchicalRecall()
    x, y, meta = task.sample(500, torch.Generator().manual_seed(0))
    assert task.length == 21 + 2 + 2 and int((y >= 0).sum()) == 500
    assert set(meta["cue_rank"][:, 0].tolist()) == set(range(9))


def test_shapes_timeline_and_targets():
    task = HierarchicalRecall(n_cues=None)
    x, y, meta = task.sample(5, torch.Generator().manual_seed(0))
    assert x.shape == (5, task.length, 16 + 9) and y.shape == (5, task.length)
    assert meta["item_times"][0].tolist() == [0, 2, 4, 8, 10, 12, 16, 18, 20]  # gaps 1, chunk gaps 3
    assert meta["global_rank"][0].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert meta["local_rank"][0].tolist() == [0, 1, 2] * 3
    e = meta["encoding_end"]
    assert float(x[:, :e, 16:].abs().sum()) == 0  # no rank or position input during encoding
    for b in range(5):  # each scored step's target is the cued rank, every rank cued once
        cue = x[b, meta["recall_times"], 16:].argmax(-1)
        assert torch.equal(y[b, meta["recall_times"]], cue)
        assert sorted(cue.tolist()) == list(range(9))
        torch.testing.assert_close(x[b, meta["item_times"][b], :16], meta["items"][b])
    assert int((y >= 0).sum()) == 5 * 9


def test_backward_recall_and_longer_lists():
    x, y, meta = HierarchicalRecall(recall="backward", n_cues=None).sample(3, torch.Generator().manual_seed(0))
    assert torch.equal(y[:, meta["recall_times"]], 8 - meta["cue_rank"])
    longer = HierarchicalRecall(n_items=12, chunks=(3, 3, 3, 3), cue_size=9, n_cues=None)
    x, y, meta = longer.sample(2)
    assert longer.input_size == 25 and meta["items"].shape == (2, 12, 16) and int(y.max()) <= 8


def test_items_are_fresh_each_episode_and_no_rank_in_single_frames():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    task = HierarchicalRecall()
    g = torch.Generator().manual_seed(0)
    x1, _, m1 = task.sample(200, g)
    x2, _, m2 = task.sample(200, g)
    assert not torch.equal(m1["items"], m2["items"])
    items = m1["items"].reshape(-1, 16).numpy()
    assert len(np.unique(items, axis=0)) > 0.95 * len(items)  # no small vocabulary
    # a decoder on single encoding frames reads no rank: chance (1/9 global position, 1/3 chunk)
    frames = x1[torch.arange(200).unsqueeze(1), m1["item_times"]].reshape(-1, 25).numpy()
    for labels, chance in ((m1["global_rank"], 1 / 3), ((m1["global_rank"] * 3 + m1["local_rank"]), 1 / 9)):
        acc = cross_val_score(LogisticRegression(max_iter=300), frames, labels.reshape(-1).numpy(), cv=3).mean()
        assert acc < chance + 0.06


def test_chunk_patterns_and_no_boundary():
    task = HierarchicalRecall(chunks=[(3, 3, 3), (2, 3, 4)], boundary="none", chunk_similarity=0.8)
    x, y, meta = task.sample(64, torch.Generator().manual_seed(0))
    assert set(meta["pattern"].tolist()) == {0, 1}
    assert all(np.diff(t.numpy()).tolist() == [2] * 8 for t in meta["item_times"])  # every gap equal
    it = meta["items"]
    same = (it[:, 0] * it[:, 1]).mean(-1)  # first two items always share chunk 0
    assert float(same.mean()) > 0.4


def test_bad_arguments():
    with pytest.raises(ValueError, match="item_dim"):
        HierarchicalRecall(item_dim=1)
    with pytest.raises(ValueError, match="sum"):
        HierarchicalRecall(n_items=9, chunks=(3, 3, 2))
    with pytest.raises(ValueError, match="recall"):
        HierarchicalRecall(recall="sideways")
    with pytest.raises(ValueError, match="same number of chunks"):
        HierarchicalRecall(chunks=[(3, 3, 3), (4, 5)])
    with pytest.raises(TypeError):
        HierarchicalRecall(n_items="9")
    with pytest.raises(TypeError, match="generator"):
        HierarchicalRecall().sample(2, generator=0)
