"""`make new` gives a package that conforms and passes its own tests (installed for real, in a prefix)."""

import os
import re
import subprocess
import sys

import conformity
import new_package

from paperworks.testing import run_cli


def test_scaffold_conforms_and_passes_its_tests(tmp_path, monkeypatch):
    pkg = new_package.scaffold("zzscaffold", tmp_path / "packages", title="A test paper")
    assert conformity.check_layout(pkg) == []
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--prefix", str(prefix), "-e", str(pkg)], check=True)
    monkeypatch.setenv("PYTHONPATH", str(pkg / "src"))
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    doc = run_cli("zzscaffold", tmp_path / "run", "experiment=smoke")
    assert doc["package"] == "zzscaffold" and len(doc["claims"]) == 2
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(pkg / "tests")],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b[1-9]\d* passed", proc.stdout) and "failed" not in proc.stdout
