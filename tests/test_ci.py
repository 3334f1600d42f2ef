"""The GitHub workflow and .ci/run do what they say: zizmor-clean, pinned, scoped, and the same commands as locally."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import conformity
import pytest
import run_tests
import yaml

ROOT = conformity.ROOT
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def steps(job: str) -> list[dict]:
    return workflow()["jobs"][job]["steps"]


def run_lines(job: str) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def zizmor() -> str | None:
    here = Path(sys.executable).parent / "zizmor"
    return str(here) if here.exists() else shutil.which("zizmor")


def test_zizmor_finds_nothing():
    exe = zizmor()
    if exe is None:
        pytest.skip("zizmor is not installed (make setup installs it from tools/dev-tools.txt)")
    proc = subprocess.run([exe, "--offline", "--persona", "pedantic", "--no-progress", str(WORKFLOW.parent)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actions_pinned_to_commits_and_checkout_drops_credentials():
    text = WORKFLOW.read_text(encoding="utf-8")
    uses = re.findall(r"uses:\s*(\S+)(.*)", text)
    assert uses
    for ref, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), f"{ref}: pin to a full commit SHA"
        assert re.search(r"#\s*v\d", comment), f"{ref}: say which version the SHA is (# vX.Y.Z)"
    for job in workflow()["jobs"].values():
        for s in job["steps"]:
            if s.get("uses", "").startswith("actions/checkout@"):
                assert s.get("with", {}).get("persist-credentials") is False


def test_permissions_concurrency_timeouts_cache():
    wf = workflow()
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"]["cancel-in-progress"] is True
    for name, job in wf["jobs"].items():
        assert 0 < job["timeout-minutes"] <= 60, name
    for name in ("repo", "package"):  # the jobs that install
        (setup,) = [s for s in steps(name) if s.get("uses", "").startswith("actions/setup-python@")]
        assert setup["with"]["cache"] == "pip" and "constraints.txt" in setup["with"]["cache-dependency-path"]


def test_torch_comes_from_the_cpu_index():
    assert workflow()["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


def test_jobs_run_what_developers_run():
    repo = run_lines("repo")
    assert "make setup" in repo and "make lint" in repo and "tools/run_tests.py --repo-only" in repo
    assert re.search(r"make test-isolated PKG=", run_lines("package"))
    assert "tools/run_tests.py --list --changed" in run_lines("changes")
    # a package job installs nothing by itself: make test-isolated does (only shared/ and the package)
    assert "pip install" not in run_lines("package")


def test_python_tested_is_python_declared():
    """requires-python everywhere is >=X.Y, and CI tests exactly X.Y (the lowest allowed)."""
    tested = str(workflow()["env"]["PYTHON_VERSION"])
    projects = [ROOT / "shared", ROOT / "tools" / "template", *conformity.package_dirs()]
    for proj in projects:
        declared = conformity.load_pyproject(proj)["project"]["requires-python"]
        assert declared == f">={tested}", f"{proj.name}: requires-python {declared}, CI tests {tested}"
    for job in workflow()["jobs"].values():
        for s in job["steps"]:
            if s.get("uses", "").startswith("actions/setup-python@"):
                assert s["with"]["python-version"] == "${{ env.PYTHON_VERSION }}"


def test_isolated_installs_only_shared_and_the_package():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "isolated.py"), "--dry-run", "robustpredict"],
                         capture_output=True, text=True, check=True).stdout
    (install,) = [line for line in out.splitlines() if " pip install " in line]
    assert install.split(" install ", 1)[1].split() == ["-q", "--no-compile", "-c", "constraints.txt", "-e", "shared[test]",
                                                         "-e", "packages/robustpredict[test]"]
    assert "pip check" in out and "tools/run_tests.py --pkg robustpredict" in out
    make = subprocess.run(["make", "-n", "-C", str(ROOT), "test-isolated", "PKG=robustpredict"],
                          capture_output=True, text=True, check=True).stdout
    assert "tools/isolated.py robustpredict" in make


def test_ci_run_script():
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    body = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    order = [i for i, line in enumerate(body) for cmd in ("make test 2", "make lint", "make test-isolated")
             if line.startswith(cmd)]
    assert len(order) == 3 and order == sorted(order)
    assert "--touched 10 --max 3" in text


def test_recently_touched(monkeypatch):
    monkeypatch.setattr(run_tests, "packages", lambda: ["a", "b", "c", "d"])

    def git(log, head="ff"):
        def fake(cmd, **kw):
            return subprocess.CompletedProcess(cmd, 0, stdout=log if "log" in cmd else head + "\n")
        return fake

    files = "packages/c/src/c/x.py\nREADME.md\npackages/a/README.md\npackages/c/y\npackages/b/z\npackages/d/z\n"
    monkeypatch.setattr(run_tests.subprocess, "run", git(files))
    assert run_tests.recently_touched(10, 3) == ["c", "a", "b"]
    monkeypatch.setattr(run_tests.subprocess, "run", git("README.md\n", head="06"))
    assert run_tests.recently_touched(10, 3) == ["c"]  # 0x06 % 4 == 2
