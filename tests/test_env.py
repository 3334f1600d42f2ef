"""Reproducible installs: constraints.txt is the lock of every third-party package, and the make venv is consistent."""

import re
import subprocess
import sys
from importlib import metadata

import conformity
import lock
import pytest

ROOT = conformity.ROOT
IN_MAKE_VENV = sys.prefix != sys.base_prefix and (__import__("pathlib").Path(sys.prefix) / ".installed").exists()


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)", line)
        if m:
            out[conformity._norm(m[1])] = m[2]
    return out


def test_constraints_is_a_lock():
    text = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    assert text.startswith("# constraints.txt") and "make lock" in text.split("\n\n", 1)[0]
    p = pins()
    assert p["torch"] == "2.13.0"  # the public version: selects the CPU build here and in CI
    assert not [n for n in p if n == "paperworks" or n.startswith("paperworks-")], "paperworks is the code under test"
    for name in ("numpy", "scipy", "jax", "scikit-learn", "hydra-core", "ruff", "deptry", "zizmor"):
        assert name in p, f"{name} is not pinned"
    # every declared third-party requirement of every project (all extras) is pinned
    for proj in [ROOT / "shared", *conformity.package_dirs()]:
        project = conformity.load_pyproject(proj)["project"]
        reqs = project.get("dependencies", []) + sum(project.get("optional-dependencies", {}).values(), [])
        for r in reqs:
            name = conformity._req_name(r)
            if name != "paperworks":
                assert name in p, f"{proj.name} requires {name}, which constraints.txt does not pin (make lock)"


def test_lock_input_has_every_extra_and_postprocess():
    text = lock.lock_input()
    assert f"-e {ROOT / 'shared'}[" in text and "-r " in text and "torch==2.13.0" in text
    for proj in lock.projects():
        extras = conformity.load_pyproject(proj)["project"].get("optional-dependencies", {})
        line = next(line for line in text.splitlines() if line.startswith(f"-e {proj}"))
        assert all(e in line for e in extras)
    raw = (f"-e file://{ROOT}/shared\nnumpy==2.0.0  # via paperworks\npaperworks-mkscp==0.1.0\n"
           f"torch==2.13.0+cpu  # via -r /tmp/x/lock.in\nbuild==1  # via -r {ROOT}/tools/dev-tools.txt\n")
    out = lock.postprocess(raw, "/tmp/x/lock.in")
    body = [line for line in out.splitlines() if line and not line.startswith("#")]
    assert body == ["numpy==2.0.0  # via paperworks", "torch==2.13.0  # via -r lock input",
                    "build==1  # via -r tools/dev-tools.txt"]


@pytest.mark.skipif(not IN_MAKE_VENV, reason="checks the .venv that make setup installs (run under make test)")
def test_make_venv_matches_the_lock_and_pip_check_passes():
    p = pins()
    wrong = []
    for dist in metadata.distributions():
        name = conformity._norm(dist.metadata["Name"])
        if name in p and dist.version.split("+")[0] != p[name].split("+")[0]:
            wrong.append(f"{name} {dist.version} (lock: {p[name]})")
    assert not wrong, "installed versions differ from constraints.txt: " + ", ".join(wrong)
    proc = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
