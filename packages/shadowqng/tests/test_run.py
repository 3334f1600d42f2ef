from shadowqng.run import run

from paperworks.hydra_glue import compose
from paperworks.testing import smoke_without_matplotlib

TINY = ["experiment=smoke", "experiment.name=bench", "study.run=false", "seeds=2",
        "bench_build.sizes=[3]", "bench_build.ks=[1,2]", "checks.n=3", "checks.layers=1", "checks.circuits=1", "checks.tradeoff_n=3", "checks.reps=1",
        "checks.snapshots=[100,400]", "checks.active_snapshots=50", "bench_devices.n=3", "bench_devices.layers=1",
        "bench_devices.snapshots=60", "bench_devices.repeats=3"]


def test_bench_path_reports_build_cost_and_device_step_time():
    out = run(compose("shadowqng", TINY))
    claims = {c.id: c for c in out["claims"]}
    assert not any(cid.startswith(("vqe_", "fewer_shots")) for cid in claims)  # the study lives in paper
    builds = [r for r in out["metrics"] if r["kind"] == "build"]
    assert {(r["n"], r["k"]) for r in builds} == {(3, 1), (3, 2)}
    build = claims["builds_at_scale"]
    assert build.verdict == "supported" and build.method.has_ci and "CPU seconds" in build.metric
    assert all(r["build_cpu_s"] > 0 and r["statevector_cpu_s"] > 0 for r in builds)
    steps = {r["device"] for r in out["metrics"] if r["kind"] == "device_step"}
    assert steps == {"default.qubit", "lightning.qubit", "lightning.qubit, shots (grouped)"}
    light = claims["lightning_step_time"]
    assert light.method.has_ci and light.rule["threshold"] == 1.5 and "grouped" not in light.metric


def test_smoke_without_matplotlib_writes_results_and_no_plots(tmp_path, monkeypatch):
    doc = smoke_without_matplotlib("shadowqng", run, monkeypatch, tmp_path, overrides=(*TINY, "experiment.name=smoke"))
    assert {c["id"] for c in doc["checks"]} == {"qfim_is_covariance", "active_set_gd"}
