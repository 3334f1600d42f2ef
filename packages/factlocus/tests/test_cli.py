from paperworks.testing import run_cli

CLAIMS = {"module_depends_on_axis_and_load", "probes_vs_patching_disagree", "probe_gap_collapses_subject",
          "crossover_order_of_magnitude", "subject_specialisation_survives_tight", "chain_dominance_subject",
          "scrubbing_confirms_chain", "scrubbing_sharpest_subject", "compressions_compete", "answer_most_localised",
          "two_hop_structure", "chain_tracks_threshold", "two_hop_two_step_chain"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("factlocus", tmp_path / "run")
    assert doc["package"] == "factlocus" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "module_profiles.png").exists()
