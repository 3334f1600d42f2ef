from cmcboot.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("cmcboot", run, monkeypatch, tmp_path,
                                   overrides=("experiment=smoke", "datasets_per_seed=4", "n_boot=30",
                                              "claim_resamples=50"))
    assert len(doc["claims"]) == 13


def test_comparisons_are_paired_over_the_shared_resamples():
    out = run(compose("cmcboot", ["experiment=smoke", "datasets_per_seed=4", "n_boot=30", "claim_resamples=50"]))
    by_id = {c.id: c for c in out["claims"]}
    for cid, base in (("percentile_beats_clt_small", "clt"), ("percentile_beats_episodic", "episodic_percentile")):
        c = by_id[cid]
        assert c.rule["kind"] == "threshold" and c.rule["threshold"] == 0.0 and c.method.method.endswith("paired-basic")
        assert {"model_percentile", base} <= set(c.baselines)
    # near nominal is two-sided
    assert by_id["qstar_1_0_shortT_cov95"].rule["kind"] == "within"


def test_small_runs_are_inconclusive_by_the_requires_rule():
    small = run(compose("cmcboot", ["experiment=smoke", "datasets_per_seed=4", "n_boot=30", "claim_resamples=50"]))
    assert all(c.verdict == "inconclusive" and "data sets per cell" in c.reason for c in small["claims"])
    met = run(compose("cmcboot", ["experiment=smoke", "datasets_per_seed=4", "n_boot=30", "claim_resamples=50",
                                  "min_datasets=12"]))
    assert not any("data sets per cell" in c.reason for c in met["claims"])


def test_diagnosis_on_planted_coverage_and_visits():
    """Per-state coverage, coverage by the rewarding pair's visits and the sweep rows, against hand counts."""
    import numpy as np
    from cmcboot.run import DIAG_METHODS, TARGETS, _diagnosis

    S, A, M = 2, 2, 4
    hot = (S - 1) * A + 1
    visits = np.zeros((M, S, A), int)
    visits.reshape(M, -1)[:, hot] = [0, 0, 5, 50]                 # data sets 0, 1 never take the rewarding pair
    visits[:, 0, 0] = [3, 1, 0, 7]
    ind = {}
    for m in DIAG_METHODS:
        for tg in TARGETS:
            width = S if tg == "V" else S * A
            cover = np.ones((M, width), bool)
            cover[:2] = False                                      # covered exactly when the pair was visited
            ind[(m, tg, 0.95)] = cover
    cell = {"behaviour": "b", "regime": "chain", "size": "n=10", "M": M, "ind": ind, "visits": visits,
            "unvisited_rate": 0.5}
    rows = _diagnosis([cell], [{**cell, "bias": 0.6}], None, S, A)
    per_state = [r for r in rows if r["part"] == "per_state"]
    assert [r["visits_mean"] for r in per_state] == [visits[:, 0].sum(-1).mean(), visits[:, 1].sum(-1).mean()]
    assert per_state[0]["unvisited_share"] == 0.25 and per_state[0]["model_percentile_V"] == 0.5
    bins = {r["reward_pair_visits"]: r for r in rows if r["part"] == "by_reward_visits"}
    assert bins["0"]["n_datasets"] == 2 and bins["0"]["model_percentile"] == 0.0
    assert bins["1-9"]["n_datasets"] == 1 and bins["1-9"]["clt"] == 1.0 and bins["10-99"]["n_datasets"] == 1
    assert bins["1000+"]["n_datasets"] == 0 and np.isnan(bins["1000+"]["clt"])
    (sweep,) = [r for r in rows if r["part"] == "bias_sweep"]
    assert sweep["bias"] == 0.6 and sweep["reward_pair_unvisited_share"] == 0.5 and sweep["clt_V"] == 0.5
