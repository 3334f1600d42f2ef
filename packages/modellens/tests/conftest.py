import numpy as np
import pandas as pd
import pytest
from modellens import ModelLens, cold_start_split
from modellens.data import planted_leaderboard


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def planted():
    """8 models × 12 datasets with planted latent factors (records, model_meta, dataset_meta)."""
    return planted_leaderboard(8, 12, seed=0)


@pytest.fixture(scope="session")
def planted_fits(planted):
    """ModelLens fitted on 3 new-dataset splits of the planted leaderboard (tiny, shared)."""
    recs, mm, dm = planted
    out = []
    for seed in range(3):
        sp = cold_start_split(recs, "new_dataset", frac=0.25, random_state=seed)
        lens = ModelLens(dim=16, epochs=150, early_stopping=False, random_state=seed).fit(sp.train, mm, dm)
        out.append((sp, lens))
    return out


@pytest.fixture
def tiny_records():
    return pd.DataFrame({
        "model": ["a-1", "b-2", "c-3", "a-1", "b-2", "c-3"],
        "dataset": ["d1", "d1", "d1", "d2", "d2", "d2"],
        "task": "classification",
        "metric": ["log_loss"] * 3 + ["accuracy"] * 3,
        "score": [0.2, 0.9, 0.5, 0.9, 0.6, 0.7],
    })
