"""Checks every package must pass (used by tests/ and by tools/new_package.py's own test).

Each function returns a list of problems (empty = conforms), so a test can show them all at once.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ("smoke", "quick", "paper", "bench")
# Every console script runs on Hydra (through paperworks): declaring these without importing them is fine.
CLI_FRAMEWORK = {"hydra-core", "omegaconf"}
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
    if "paperworks" not in {_req_name(r) for r in proj.get("dependencies", [])}:
        problems.append("does not depend on paperworks by name")
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
    return problems


def imported_modules(root: Path) -> set[str]:
    """Top-level names of absolute imports in the .py files under ``root``."""
    mods = set()
    for f in root.rglob("*.py"):
        tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split(".")[0])
    return mods


def module_owners() -> dict[str, list[str]]:
    """Map top-level module → distributions, including editable installs (whose RECORD lists only a .pth)."""
    owners = {k: list(v) for k, v in metadata.packages_distributions().items()}
    for dist in metadata.distributions():
        for f in dist.files or []:
            if f.suffix != ".pth":
                continue
            try:
                lines = Path(dist.locate_file(f)).read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                src = Path(line.strip())
                if line.startswith(("import", "#")) or not src.is_dir():
                    continue
                for child in src.iterdir():
                    if (child / "__init__.py").exists():
                        owners.setdefault(child.name, []).append(dist.metadata["Name"])
    return owners


def check_dependencies(pkg: Path) -> list[str]:
    """Every third-party module imported is declared (the deptry DEP001/DEP002 rules).

    src/ imports must be in [project] dependencies or an extra; tests/ imports may also be in [test].
    A declared runtime dependency that src/ never imports is reported unless listed in
    ``[tool.paperworks] runtime-only`` (e.g. a solver backend used through another library).
    """
    slug = pkg.name
    py = load_pyproject(pkg)
    proj = py.get("project", {})
    main = {_req_name(r) for r in proj.get("dependencies", [])}
    extras = {k: {_req_name(r) for r in v} for k, v in proj.get("optional-dependencies", {}).items()}
    all_declared = main.union(*extras.values()) if extras else set(main)
    runtime_only = {_norm(n) for n in py.get("tool", {}).get("paperworks", {}).get("runtime-only", [])}
    dists = module_owners()
    problems = []
    used: set[str] = set()
    for where, allowed in (("src", all_declared), ("tests", all_declared)):
        root = pkg / where
        if not root.exists():
            continue
        for mod in sorted(imported_modules(root)):
            if mod in sys.stdlib_module_names or mod in (slug, "conftest", "__future__"):
                continue
            owners = {_norm(d) for d in dists.get(mod, [])}
            if not owners:
                problems.append(f"{where}/ imports {mod!r}, which no installed distribution provides")
                continue
            if where == "src":
                used |= owners
            if not owners & allowed:
                problems.append(f"{where}/ imports {mod!r} (from {sorted(owners)}) but does not declare it")
    for dep in sorted(main - used - runtime_only - CLI_FRAMEWORK):
        problems.append(f"declares {dep!r} but src/ never imports it (add it to [tool.paperworks] runtime-only if needed)")
    return problems
