import warnings

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def theory():
    """A small theory-regime setting: PT task on S₀, 3 FT tasks (ρ = 0), W₀ and rank-4 adapters."""
    from malora.data import theory_tasks
    from malora.lora import train_head, train_lora

    pt, fts = theory_tasks(0, d=40, k=6, T=3, rho=0.0, n_classes=4, n=60, separations=[4.0, 6.0, 8.0],
                           pt_separation=6.0, noise=0.5, n_test=100)
    W0 = train_head(pt.X, pt.y, 4)
    deltas = [train_lora(W0, t.X, t.y, rank=3, lam=1e-3)["delta"] for t in fts]
    return {"pt": pt, "fts": fts, "W0": W0, "deltas": deltas}


@pytest.fixture(scope="session")
def tiny_peft():
    """A tiny random BERT classifier with 3 random LoRA adapters on every linear layer + calibration."""
    from malora.bench import adapters_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return adapters_model(3, seed=0, rank=2, n_calib=12)
