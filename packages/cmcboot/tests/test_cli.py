import pytest

from paperworks.results import load_results
from paperworks.testing import run_cli

CLAIMS = {"consistency_chain", "consistency_episodic", "valid_ci_V", "valid_ci_Q", "valid_ci_Qstar",
          "percentile_beats_clt_small", "percentile_beats_episodic", "percentile_near_nominal", "clt_poor_small",
          "episodic_poor_short", "qpi_1_0_cov95", "qstar_1_0_shortT_cov95", "qstar_1_0_longT_cov90"}


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("cmcboot", tmp_path / "run")
    assert doc["package"] == "cmcboot" and doc["experiment"] == "smoke"
    assert {c["id"] for c in doc["claims"]} == CLAIMS
    assert (tmp_path / "run" / "metrics.csv").exists() and (tmp_path / "run" / "coverage.png").exists()
    # loose band on the smoke coverage (M=30): the percentile CIs are neither empty nor always-covering junk
    ce = {c["id"]: c["method"]["value"] for c in doc["claims"]}
    assert 0.0 <= ce["percentile_near_nominal"] < 0.25
    assert doc["extra"]["datasets_per_cell"] == 30 and doc["extra"]["true_qstar_ties"] == 0


def test_bench_runs_in_miniature():
    from cmcboot.run import run

    from paperworks.hydra_glue import compose

    cfg = compose("cmcboot", ["experiment=bench", "n=300", "n_boot=20", "seeds=2", "states=[12]",
                              "bench_episode_length=10", "bench_repeats=3", "bench_warmup=0", "growth_repeats=3",
                              "bench_memory=false"])
    out = run(cfg)
    assert [c.id for c in out["claims"]] == ["vectorised_speedup", "vectorised_speedup_S12"]
    for claim in out["claims"]:
        assert claim.method.has_ci and claim.method.method == "bootstrap-median" and claim.method.n == 3
    speed = [r for r in out["metrics"] if r["part"] == "speedup" and "candidate" in r]
    assert {r["candidate"] for r in speed} == {"vectorised", "loop"} and all(r["cpu_median_s"] > 0 for r in speed)
    (row,) = [r for r in out["metrics"] if r["part"] == "states"]
    assert row["n_states"] == 12 and 1 <= row["reached_states"] <= 12
    assert {r["candidate"] for r in out["metrics"] if r["part"] == "baselines"} == {
        "model bootstrap (episodic data)", "episodic bootstrap", "plug-in CLT"}


def test_fit_verb_writes_the_users_intervals(tmp_path, monkeypatch):
    """`cmcboot fit data.path=...` (through the console script's main, in-process) on a CSV with a bad
    row and renamed columns gives the intervals of ModelBootstrap on the same rows."""
    import csv

    import numpy as np
    from cmcboot import ModelBootstrap, riverswim, riverswim_behaviours, simulate_datasets
    from cmcboot.cli import main

    P, R = riverswim(5)
    d = simulate_datasets(P, riverswim_behaviours(5)["history"], n_datasets=1, n_episodes=1, length=300,
                          initial=np.eye(5)[0], rng=np.random.default_rng(3))[0, 0]
    rewards = R[d[:, 0], d[:, 1]]
    path = tmp_path / "traj.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["obs", "act", "next_obs", "r"])
        for s, a, s2, r in zip(d[:, 0], d[:, 1], d[:, 2], rewards):
            w.writerow([s, a, s2, r])
        w.writerow([1, "left", 0, 0])                      # a bad last row: skipped and counted (line 302)
    run_dir = tmp_path / "run"
    monkeypatch.setattr("sys.argv", ["cmcboot", "fit", f"data.path={path}", "data.columns.state=obs",
                                     "data.columns.action=act", "data.columns.next_state=next_obs",
                                     "data.columns.reward=r", "n_states=7", "n_actions=2", "n_boot=30", "seed=4",
                                     "targets=[V,Q]", "policy=[1,1,1,1,1,1,1]", f"hydra.run.dir={run_dir}"])
    main()
    doc = load_results(run_dir / "results.json")
    assert doc["experiment"] == "fit" and doc["extra"]["data"]["skipped"][0]["line"] == 302
    assert doc["extra"]["unreached_states"] == [5, 6] and doc["extra"]["n_states_inferred"] is False
    rows = list(csv.DictReader((run_dir / "intervals.csv").open()))
    assert len(rows) == 7 + 14
    traj = np.column_stack([d, rewards]).astype(float)
    mb = ModelBootstrap(n_boot=30, seed=4, n_states=7, n_actions=2).fit(traj)
    with pytest.warns(UserWarning, match="unvisited"):
        lo, hi = mb.interval("V", policy=np.ones(7, dtype=int), gamma=0.9)
    v = [r for r in rows if r["target"] == "V"]
    np.testing.assert_allclose([float(r["lower"]) for r in v], lo, rtol=1e-9)
    np.testing.assert_allclose([float(r["upper"]) for r in v], hi, rtol=1e-9)
    assert [int(r["visits_state"]) for r in v] == mb.visits_.sum(-1).tolist()
