from shadowqng.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib

TINY = ["experiment=smoke", "experiment.name=bench", "methods=[sgd,shadowqng]", "seeds=2", "budget=3000",
        "bench_build.sizes=[3]", "bench_build.ks=[1,2]", "checks.n=3", "checks.layers=1", "checks.circuits=1", "checks.tradeoff_n=3", "checks.reps=1",
        "checks.snapshots=[100,400]", "checks.active_snapshots=50", "bench_devices.n=3", "bench_devices.layers=1",
        "bench_devices.snapshots=60", "bench_devices.repeats=3"]


def test_bench_path_reports_shots_to_target_and_build_cost():
    out = run(compose("shadowqng", TINY + ["target=0.0"]))  # nobody reaches a zero error
    claims = {c.id: c for c in out["claims"]}
    # every run censored at the cap: a miss is never imputed, so there is no verdict
    fewer = claims["fewer_shots_tfim"]
    assert fewer.verdict == "inconclusive" and "missed the target" in fewer.reason
    assert fewer.method.n_censored == 2 and fewer.rule["kind"] == "compare_all"
    assert "0/2" in fewer.notes
    builds = [r for r in out["metrics"] if r["kind"] == "build"]
    assert {(r["n"], r["k"]) for r in builds} == {(3, 1), (3, 2)}
    build = claims["builds_at_scale"]
    assert build.verdict == "supported" and build.method.has_ci and "CPU seconds" in build.metric
    assert all(r["build_cpu_s"] > 0 and r["statevector_cpu_s"] > 0 for r in builds)
    steps = {r["device"] for r in out["metrics"] if r["kind"] == "device_step"}
    assert steps == {"default.qubit", "lightning.qubit", "lightning.qubit, shots (grouped)"}
    light = claims["lightning_step_time"]
    assert light.method.has_ci and light.rule["threshold"] == 1.5 and "grouped" not in light.metric


def test_vqe_rows_cover_every_method_lr_and_seed():
    out = run(compose("shadowqng", TINY + ["experiment.name=smoke", "lrs=[0.05,0.2]"]))
    vqe = [r for r in out["metrics"] if r["kind"] == "vqe"]
    assert len(vqe) == 2 * 2 * 2  # methods × lrs × seeds
    assert all(r["shots"] >= 3000 for r in vqe)
    best = {(r["method"], r["lr"]) for r in vqe if r["best_lr"]}
    assert len(best) == 2  # one chosen rate per method


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("shadowqng", run, monkeypatch, tmp_path, overrides=(*TINY, "experiment.name=smoke"))
    assert {c["id"] for c in doc["checks"]} == {"qfim_is_covariance", "active_set_gd"}
