"""Installable anywhere: wheels of shared/ and a package install into a fresh venv from dist/ only and run.

robustpredict is the lightest package (numpy, scipy, scikit-learn, hydra); its third-party
dependencies come from the registry (or pip's cache) with -c constraints.txt, then paperworks and
paperworks-robustpredict come from the built wheels alone (--no-index), so nothing of the checkout
is used at run time.
"""

import importlib.util
import os
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import conformity
import pytest
from packaging.requirements import Requirement

ROOT = conformity.ROOT
SLUG = "robustpredict"


def build(project: Path, outdir: Path) -> None:
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(outdir), str(project)],
                   check=True, capture_output=True, text=True)


def wheel_metadata(whl: Path):
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        return names, Parser().parsestr(z.read(meta).decode())


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    if importlib.util.find_spec("build") is None or importlib.util.find_spec("hatchling") is None:
        pytest.skip("needs `build` and `hatchling` (make setup installs them from tools/dev-tools.txt)")
    out = tmp_path_factory.mktemp("dist")
    build(ROOT / "shared", out)
    build(ROOT / "packages" / SLUG, out)
    return out


def test_wheels_carry_license_and_a_bounded_paperworks(dist):
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    assert [w.name.split("-")[0] for w in wheels] == ["paperworks", f"paperworks_{SLUG}"]
    assert len(sdists) == 2
    shared_version = conformity.load_pyproject(ROOT / "shared")["project"]["version"]
    for whl in wheels:
        names, meta = wheel_metadata(whl)
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), f"{whl.name} has no LICENSE"
        assert meta["Requires-Python"] == ">=3.11"
        if meta["Name"] == "paperworks":
            assert meta["Version"] == shared_version
        else:
            (pw,) = [r for r in meta.get_all("Requires-Dist") if r.startswith("paperworks") and "extra" not in r]
            spec = Requirement(pw).specifier  # bounded, and admits the paperworks built beside it
            assert spec.contains(shared_version) and any(s.operator == "<" for s in spec), pw
    for sd in sdists:
        with tarfile.open(sd) as tf:
            assert any(n.endswith("/LICENSE") for n in tf.getnames()), f"{sd.name} has no LICENSE"


def test_fresh_venv_from_dist_only_runs_smoke(dist, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv = tmp_path / "venv"
    # a bare venv, filled by this (make) venv's pip through --python: no ensurepip, no .pyc compiling
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    third_party = []
    for whl in dist.glob("*.whl"):
        for req in wheel_metadata(whl)[1].get_all("Requires-Dist") or []:
            if "extra ==" not in req and conformity._req_name(req) not in ("paperworks",):
                third_party.append(req)
    pip = [sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-compile", "--disable-pip-version-check"]
    for args in (["-c", str(ROOT / "constraints.txt"), *third_party],
                 ["--no-index", "--find-links", str(dist), f"paperworks-{SLUG}"]):
        proc = subprocess.run([*pip, *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"pip install {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    check = subprocess.run([sys.executable, "-m", "pip", "--python", py, "check"], capture_output=True, text=True,
                           env=env)
    assert check.returncode == 0, check.stdout
    where = subprocess.run([py, "-c", f"import paperworks, {SLUG}; print(paperworks.__file__); print({SLUG}.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path, env=env).stdout.split()
    assert all(str(venv) in f and str(ROOT) not in f for f in where), where
    run = tmp_path / "run"
    proc = subprocess.run([str(venv / "bin" / SLUG), "experiment=smoke", f"hydra.run.dir={run}"],
                          capture_output=True, text=True, cwd=tmp_path, env=dict(env, MPLBACKEND="Agg"), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = __import__("json").loads((run / "results.json").read_text())
    assert doc["package"] == SLUG and doc["experiment"] == "smoke" and doc["claims"]


def test_make_dist_builds_every_project():
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "dist"], capture_output=True, text=True, check=True).stdout
    assert "-m build --no-isolation --outdir dist shared" in out
    assert "packages/$p" in out and "for p in" in out
