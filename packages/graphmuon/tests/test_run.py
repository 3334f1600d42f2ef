import math

import pytest
from graphmuon.run import ratio_estimate, run
from graphmuon.train import to_target

from paperworks.hydra_glue import compose


def test_ratio_estimate_is_a_geometric_mean_with_interval():
    e = ratio_estimate([2.0, 8.0, 4.0], [1.0, 2.0, 2.0])
    assert e.value == pytest.approx(2.0**(4 / 3))  # ratios 2, 4, 2
    assert e.lower < e.value < e.upper
    assert ratio_estimate([3.0], [1.5]).value == pytest.approx(2.0)


def test_to_target_counts_steps_and_timed_seconds():
    run_ = {"val": [0.1, 0.5, 0.9, 0.95], "clock": [1.0, 2.0, 3.5, 4.0]}
    assert to_target(run_, 0.9) == (3.0, 3.5)
    assert to_target(run_, 0.99) == (math.inf, math.inf)


@pytest.mark.parametrize("exp", ["smoke", "quick", "paper", "bench"])
def test_every_experiment_composes(exp):
    cfg = compose("graphmuon", [f"experiment={exp}"])
    assert cfg.experiment.name == exp
    assert len(cfg.lr_grid) >= 2 and "adamw" in cfg.optimizers
    names = {r["name"] for r in cfg.regimes}
    used = {v for k, v in cfg.claims.items() if k != "bench"} | set(cfg.claims.get("bench", []))
    assert used <= names


def test_run_needs_adamw_and_graphmuon():
    cfg = compose("graphmuon", ["experiment=smoke", "optimizers=[muon,graphmuon]"])
    with pytest.raises(ValueError, match="optimizers must include 'adamw'"):
        run(cfg)
