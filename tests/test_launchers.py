"""Hydra launchers from paperworks' extras: a joblib sweep of a package's smoke, pooled by `aggregate`;
the SLURM (submitit) and Ray launcher configs composed and validated without a cluster."""

import importlib.util
import json
import subprocess
import sys

import pytest

from paperworks.hydra_glue import compose
from paperworks.testing import console_script

PKG = "robustpredict"


@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is None,
                    reason="pip install 'paperworks[joblib]'")
def test_joblib_sweep_of_smoke_is_aggregated(tmp_path):
    sweep = tmp_path / "sweep"
    args = [console_script(PKG), "-m", "experiment=smoke", "seed=0,1", "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", "controlled.n_test=1000", "learned.n_test=1000",
            "controlled.n_cal=300", "learned.n_cal=300", "learned.ns=[300]"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = sorted(sweep.glob("*/results.json"))
    assert len(jobs) == 2
    seeds = [json.loads(j.read_text())["seeds"] for j in jobs]
    assert not set(seeds[0]) & set(seeds[1]), f"seed blocks overlap: {seeds}"
    out = subprocess.run([sys.executable, "-m", "paperworks", "aggregate", str(sweep)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((sweep / "aggregate" / "results.json").read_text())
    assert doc["seeds"] == sorted(seeds[0] + seeds[1]) and doc["extra"]["jobs"] == 2
    pooled = [c for c in doc["claims"] if c["method"]["n"] == len(doc["seeds"])]
    assert pooled, "at least one claim is pooled over every seed of the sweep"


@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None,
                    reason="pip install 'paperworks[submitit]'")
def test_slurm_launcher_config_composes():
    cfg = compose(PKG, ["experiment=smoke", "hydra/launcher=submitit_slurm", "hydra.launcher.partition=cpu",
                        "hydra.launcher.timeout_min=30", "hydra.launcher.cpus_per_task=2"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.partition, launcher.timeout_min, launcher.cpus_per_task) == ("cpu", 30, 2)


@pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None,
                    reason="pip install 'paperworks[ray]' (not installed by make test: ray is large)")
def test_ray_launcher_config_composes():
    cfg = compose(PKG, ["experiment=smoke", "hydra/launcher=ray"], return_hydra_config=True)
    assert "Ray" in cfg.hydra.launcher._target_
