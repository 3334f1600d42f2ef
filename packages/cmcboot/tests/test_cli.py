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

    cfg = compose("cmcboot", ["experiment=bench", "n=300", "n_boot=20", "seeds=2", "states=[6,10]",
                              "loop_boot_growth=2", "bench_episode_length=10", "bench_repeats=3", "bench_warmup=0",
                              "growth_repeats=3"])
    out = run(cfg)
    (claim,) = out["claims"]
    assert claim.id == "vectorised_speedup" and claim.method.has_ci  # an interval over the interleaved rounds
    assert claim.method.method == "bootstrap-median" and claim.method.n == 3
    speed = [r for r in out["metrics"] if r["part"] == "speedup" and "candidate" in r]
    assert {r["candidate"] for r in speed} == {"vectorised", "loop"} and all(r["cpu_median_s"] > 0 for r in speed)
    assert [r["n_states"] for r in out["metrics"] if r["part"] == "states"] == [6, 10]
    assert {r["candidate"] for r in out["metrics"] if r["part"] == "baselines"} == {
        "model bootstrap (episodic data)", "episodic bootstrap", "plug-in CLT"}
