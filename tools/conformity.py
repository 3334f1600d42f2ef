"""Checks every package must pass (used by tests/ and by tools/new_package.py's own test).

Each function returns a list of problems (empty = conforms), so a test can show them all at once.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ("smoke", "quick", "paper", "bench")
# Every console script runs on Hydra (through paperworks): declaring these without importing them is fine.
CLI_FRAMEWORK = ("hydra-core", "omegaconf")
README_SECTIONS = ("## Paper", "## Method", "## Install", "## Quickstart", "## CLI", "## Results")


def package_dirs(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / "packages").iterdir() if (p / "pyproject.toml").exists())


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.split(r"[<>=!~;\[\s(]", req.strip(), maxsplit=1)[0])


def load_pyproject(pkg: Path) -> dict:
    return tomllib.loads((pkg / "pyproject.toml").read_text(encoding="utf-8"))


def check_layout(pkg: Path) -> list[str]:
    slug = pkg.name
    problems = []
    proj = load_pyproject(pkg).get("project", {})
    if proj.get("name") != f"paperworks-{slug}":
        problems.append(f"dist name is {proj.get('name')!r}, expected 'paperworks-{slug}'")
    if proj.get("scripts", {}).get(slug) != f"{slug}.cli:main":
        problems.append(f"console script {slug} = '{slug}.cli:main' missing")
    extras = proj.get("optional-dependencies", {})
    if "test" not in extras:
        problems.append("no [test] extra")
    pw = [Requirement(r) for r in proj.get("dependencies", []) if _req_name(r) == "paperworks"]
    if not pw:
        problems.append("does not depend on paperworks by name")
    else:
        shared_version = Version(load_pyproject(ROOT / "shared")["project"]["version"])
        spec = pw[0].specifier
        if not spec.contains(shared_version):
            problems.append(f"paperworks{spec} does not admit shared/'s version {shared_version}")
        if not any(s.operator == "<" for s in spec):
            problems.append(f"paperworks{spec} has no upper bound (expected e.g. paperworks>=0.2,<0.3)")
    if any("==" in r for r in proj.get("dependencies", [])):
        problems.append("exact pins belong in constraints.txt, not the package")
    src = pkg / "src" / slug
    for f in ("__init__.py", "cli.py", "run.py", "conf/config.yaml"):
        if not (src / f).exists():
            problems.append(f"src/{slug}/{f} missing")
    init = (src / "__init__.py").read_text(encoding="utf-8") if (src / "__init__.py").exists() else ""
    for name in ("__all__", "__version__"):
        if name not in init:
            problems.append(f"__init__.py defines no {name}")
    for exp in EXPERIMENTS:
        f = src / "conf" / "experiment" / f"{exp}.yaml"
        if not f.exists():
            problems.append(f"experiment {exp} missing ({f.relative_to(pkg)})")
            continue
        doc = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        if (doc.get("experiment") or {}).get("name") != exp:
            problems.append(f"{f.name}: experiment.name must be {exp!r}")
    readme = pkg / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else ""
    for sec in README_SECTIONS:
        if not re.search(rf"^{re.escape(sec)}\s*$", text, re.M):
            problems.append(f"README lacks the section {sec!r}")
    tests = pkg / "tests"
    if not tests.is_dir() or not list(tests.glob("test_*.py")):
        problems.append("no tests/test_*.py")
    if (tests / "__init__.py").exists():
        problems.append("tests/__init__.py must not exist")
    for f in ("conftest.py", "test_cli.py", "test_readme.py"):
        if not (tests / f).exists():
            problems.append(f"tests/{f} missing")
    if (tests / "test_cli.py").exists() and not _calls(tests / "test_cli.py", {"run_cli", "console_script"}):
        problems.append("tests/test_cli.py never runs the installed console script (paperworks.testing.run_cli)")
    if (pkg / "requirements-nodeps.txt").exists():
        problems.append("requirements-nodeps.txt: a dependency installed with --no-deps breaks `pip check`")
    problems += check_license(pkg)
    return problems


def _calls(path: Path, names: set[str]) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id in names) or (isinstance(f, ast.Attribute) and f.attr in names):
                return True
    return False


def check_license(pkg: Path) -> list[str]:
    """The project dir carries the repo's LICENSE (hatchling puts it in the wheel's dist-info/licenses)."""
    lic = pkg / "LICENSE"
    if not lic.exists():
        return ["LICENSE missing (copy the repo's LICENSE: hatchling ships it in the wheel and sdist)"]
    if lic.read_bytes() != (ROOT / "LICENSE").read_bytes():
        return ["LICENSE differs from the repo's LICENSE"]
    if load_pyproject(pkg).get("project", {}).get("license") != "MIT":
        return ["pyproject license is not 'MIT' (the repo's LICENSE)"]
    return []


def deptry_exe() -> str | None:
    here = Path(sys.executable).parent / "deptry"
    return str(here) if here.exists() else shutil.which("deptry")


def run_deptry(pkg: Path, root: str, config: Path) -> list[dict]:
    """deptry's issues (as its JSON report) for ``pkg/root`` with the pyproject ``config``."""
    exe = deptry_exe()
    if exe is None:
        raise FileNotFoundError("deptry is not installed (make setup installs it; pip install deptry)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "deptry.json"
        proc = subprocess.run([exe, root, "--config", str(config), "--no-ansi", "--json-output", str(out)],
                              cwd=pkg, capture_output=True, text=True)
        if not out.exists():
            raise RuntimeError(f"deptry failed on {pkg / root} ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return json.loads(out.read_text(encoding="utf-8"))


def _describe(where: str, issue: dict) -> str:
    loc = issue.get("location") or {}
    place = f"{loc.get('file')}:{loc.get('line')}" if loc.get("line") else str(loc.get("file", where))
    return f"{where}: {issue['error']['code']} {issue['error']['message']} ({place})"


def check_dependencies(pkg: Path) -> list[str]:
    """Every package declares exactly what it imports, checked with deptry.

    - ``src/`` against the package's own ``[tool.deptry]`` (``cd packages/<slug> && deptry src``):
      an import must be a runtime dependency (``[project] dependencies`` or a non-test extra such as
      [plot]); the [test] extra is a dev group, so src/ importing it is DEP004; a runtime dependency
      src/ never imports is DEP002 (hydra-core and omegaconf are exempt: the CLI uses them).
    - ``tests/`` against a temporary config whose dependencies are the runtime ones plus [test]
      only: a test importing something no dependency declares is DEP001/DEP003.
    """
    slug = pkg.name
    proj = load_pyproject(pkg).get("project", {})
    problems = [_describe("src", i) for i in run_deptry(pkg, "src", pkg / "pyproject.toml")]
    extras = proj.get("optional-dependencies", {})
    deps = [*proj.get("dependencies", []), *extras.get("test", [])]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "pyproject.toml"
        cfg.write_text(
            "[project]\n"
            f'name = "paperworks-{slug}-tests"\nversion = "0"\n'
            f"dependencies = {json.dumps(deps)}\n\n"
            "[tool.deptry]\n"
            f"known_first_party = {json.dumps([slug])}\n"
            'ignore = ["DEP002"]\n'
            'exclude = ["__pycache__"]\n', encoding="utf-8")  # deptry's default exclude skips tests/
        if (pkg / "tests").is_dir():
            problems += [_describe("tests", i) for i in run_deptry(pkg, "tests", cfg)]
    return problems


