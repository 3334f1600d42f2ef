import os

import pytest

from paperworks.hydra_glue import compose
from paperworks.testing import run_cli, smoke_without_matplotlib

CLAIMS = {"module_depends_on_axis", "module_depends_on_load", "probes_vs_patching_disagree", "probe_gap_collapses_subject",
          "subject_specialisation_survives_tight", "chain_dominance_subject", "scrubbing_confirms_chain",
          "scrubbing_sharpest_subject", "compressions_compete", "answer_most_localised", "two_hop_structure",
          "chain_tracks_threshold", "two_hop_two_step_chain", "crossover_order_of_magnitude"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("factlocus", tmp_path / "run")
    assert doc["package"] == "factlocus" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "module_profiles.png").exists()


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    """The glue writes results.json before plotting: without matplotlib the run still succeeds."""
    from factlocus.run import run

    doc = smoke_without_matplotlib("factlocus", run, monkeypatch, tmp_path)
    assert {c["id"] for c in doc["claims"]} == CLAIMS


@pytest.mark.slow  # two spawned workers import torch and scikit-learn (~45 s of CPU on 2 cores)
def test_worker_processes_log_into_the_parents_handlers(caplog):
    """Cells run in spawned workers (jobs=2): their records reach the parent's handlers (Hydra's log)."""
    import logging

    from factlocus.run import run_cells

    cfg = compose("factlocus", ["experiment=smoke", "jobs=2", "train.steps=5", "analysis.n_patch=8",
                                "analysis.n_path=4", "analysis.probe_iter=5", "analysis.n_probe=64"])
    caplog.set_level(logging.INFO)
    out = run_cells(cfg, [("independent", 16, 0, {}), ("subject", 16, 0, {})])
    assert [r["motif"] for r, _ in out] == ["independent", "subject"]
    worker = [r for r in caplog.records if r.name == "factlocus.model" and r.getMessage().startswith("trained")]
    assert {r.process for r in worker} and os.getpid() not in {r.process for r in worker}
    assert len(worker) == 2
