"""Test helpers shared by the package suites and the repo-level tests (development only).

Nothing at run time imports this module; it is for the packages' test suites, which run from a
checkout with ``paperworks[dev]`` (pytest) installed. The report builder, the other piece of repo
tooling, lives in the repository's ``tools/`` and is not shipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from paperworks.results import load_results


def console_script(name: str) -> str:
    """Path of the installed console script ``name`` (next to the running Python first)."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"console script {name!r} is not installed (pip install -e packages/{name})")
    return found


def run_cli(slug: str, run_dir: Path, *overrides: str, timeout: float = 300) -> dict:
    """Run ``<slug> experiment=smoke hydra.run.dir=<run_dir> ...`` and return its validated results."""
    args = [console_script(slug), *(overrides or ("experiment=smoke",)), f"hydra.run.dir={run_dir}"]
    env = dict(os.environ, PYTHONHASHSEED="0", MPLBACKEND="Agg")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return load_results(Path(run_dir) / "results.json")


def readme_python_blocks(readme: Path, marker: str = "## Quickstart") -> list[str]:
    """The ```python blocks of the README section that starts with ``marker``."""
    text = Path(readme).read_text(encoding="utf-8")
    if marker not in text:
        raise AssertionError(f"{readme} has no {marker!r} section")
    section = text.split(marker, 1)[1].split("\n## ", 1)[0]
    blocks = []
    for part in section.split("```python")[1:]:
        blocks.append(part.split("```", 1)[0])
    if not blocks:
        raise AssertionError(f"{readme}: {marker!r} holds no ```python block")
    return blocks


def smoke_without_matplotlib(slug: str, run, monkeypatch, out_dir: Path,
                             overrides: tuple[str, ...] = ("experiment=smoke",)) -> dict:
    """Run ``slug``'s experiment in-process with matplotlib made unimportable; return results.json.

    The run contract says a run returns its plots as a callable, so a run without matplotlib must
    still write ``results.json`` (the glue logs "no plots"). This checks that, and that no figure
    was written. ``monkeypatch`` is pytest's fixture; ``run`` is the package's ``run(cfg, out_dir)``.
    """
    from paperworks.hydra_glue import compose, execute

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, f"{slug}.plot", raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out_dir = Path(out_dir)
    doc = execute(slug, run, compose(slug, list(overrides)), out_dir)
    if not (out_dir / "results.json").exists():
        raise AssertionError(f"{slug}: no results.json in {out_dir} without matplotlib")
    pngs = sorted(p.name for p in out_dir.rglob("*.png"))
    if pngs:
        raise AssertionError(f"{slug}: figures written without matplotlib: {pngs}")
    return doc
