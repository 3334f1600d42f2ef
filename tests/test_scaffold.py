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
    assert conformity.check_dependencies(pkg) == []
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


README_ROWS = """# t

| slug | paper | status | package |
|---|---|---|---|
| `zznewpkg` | A Paper About Things: a subtitle | planned | — |
| `other` | Another | planned | — |
"""


def test_make_new_leaves_nothing_behind_when_install_fails(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(README_ROWS)
    dest = tmp_path / "packages"
    dest.mkdir()
    rc = new_package.main(["zznewpkg", "--dest", str(dest), "--readme", str(readme), "--install", "--python", "false"])
    assert rc == 1
    assert not (dest / "zznewpkg").exists()
    assert readme.read_text() == README_ROWS


def test_make_new_takes_the_title_from_the_readme_and_marks_it(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(README_ROWS)
    rc = new_package.main(["zznewpkg", "--dest", str(tmp_path / "packages"), "--readme", str(readme)])
    assert rc == 0
    pyproject = (tmp_path / "packages" / "zznewpkg" / "pyproject.toml").read_text()
    assert 'description = "A Paper About Things: a subtitle"' in pyproject
    assert '"paperworks>=0.2.1,<0.3"' in pyproject
    assert "| `zznewpkg` | A Paper About Things: a subtitle | available | [README](packages/zznewpkg/README.md) |" in readme.read_text()
    assert new_package.main(["zznewpkg", "--dest", str(tmp_path / "packages"), "--readme", str(readme)]) == 2


def test_make_new_installs_with_shared():
    cmd = new_package.install_command(conformity.ROOT / "packages" / "zz", "python")
    assert f"{conformity.ROOT / 'shared'}[test,plot]" in cmd and "-c" in cmd
    make = subprocess.run(["make", "-n", "-C", str(conformity.ROOT), "new", "PKG=zz"], capture_output=True,
                          text=True, check=True).stdout
    assert "tools/new_package.py zz --install" in make
