from shadowqng.run import run

from paperworks.hydra_glue import compose

TINY = ["experiment=smoke", "experiment.name=bench", "methods=[sgd,shadowqng]", "seeds=2", "budget=3000",
        "bench_build.sizes=[3]", "bench_build.ks=[1,2]", "checks.n=3", "checks.layers=1", "checks.circuits=1", "checks.tradeoff_n=3", "checks.reps=1",
        "checks.snapshots=[100,400]", "checks.active_snapshots=50"]


def test_bench_path_reports_shots_to_target_and_build_cost():
    out = run(compose("shadowqng", TINY + ["target=0.0"]))  # nobody reaches a zero error
    claims = {c.id: c for c in out["claims"]}
    # a tie (every run censored at the cap) is not "fewer shots"
    assert claims["fewer_shots_tfim"].verdict != "supported"
    assert "0/2" in claims["fewer_shots_tfim"].notes
    builds = [r for r in out["metrics"] if r["kind"] == "build"]
    assert {(r["n"], r["k"]) for r in builds} == {(3, 1), (3, 2)}
    assert claims["builds_at_scale"].verdict == "supported"


def test_vqe_rows_cover_every_method_lr_and_seed():
    out = run(compose("shadowqng", TINY + ["experiment.name=smoke", "lrs=[0.05,0.2]"]))
    vqe = [r for r in out["metrics"] if r["kind"] == "vqe"]
    assert len(vqe) == 2 * 2 * 2  # methods × lrs × seeds
    assert all(r["shots"] >= 3000 for r in vqe)
    best = {(r["method"], r["lr"]) for r in vqe if r["best_lr"]}
    assert len(best) == 2  # one chosen rate per method
