import pytest
import torch


@pytest.fixture(scope="session")
def toy():
    """50 ToyDriving sequences of 12 frames at 8×8 (the smoke size)."""
    from hierwm import make_dataset

    return make_dataset(50, seed=0, length=12, size=8)


@pytest.fixture(scope="session")
def trained(toy):
    """A hierarchical and a flat model trained 20 steps each (DF→TF) on the toy data, with their losses."""
    from hierwm import FlatWorldModel, HierarchicalWorldModel, train

    out = {}
    for name, cls in (("hier", HierarchicalWorldModel), ("flat", FlatWorldModel)):
        torch.manual_seed(0)
        kw = {"match_width": 24} if name == "flat" else {"width": 24}
        m = cls(frame_shape=(3, 8, 8), coarse_shape=(3, 4, 4), **kw)
        hist = train(m, toy, objective="df_tf", steps=20, batch_size=8, seed=0)
        out[name] = (m, hist["losses"])
    return out
