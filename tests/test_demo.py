"""make demo: a failing package does not stop the others; the report covers those that succeeded; exit 1."""

import os
import subprocess
import sys
from pathlib import Path

import conformity

from paperworks.testing import console_script

ROOT = conformity.ROOT


def test_demo_continues_past_failures_and_reports_the_rest(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(console_script("robustpredict"), bin_dir / "robustpredict")
    fail = bin_dir / "zzbroken"
    fail.write_text("#!/bin/sh\necho broken on purpose >&2\nexit 3\n")
    fail.chmod(0o755)
    runs, out = tmp_path / "runs", tmp_path / "reports"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "demo.py"), "--bin", str(bin_dir), "--runs", str(runs),
                           "--out", str(out), "--experiment", "smoke", "zzbroken", "robustpredict", "zzmissing"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "zzbroken: exit status 3" in proc.stdout and "zzmissing:" in proc.stdout and "not installed" in proc.stdout
    assert "2 package(s) failed" in proc.stdout
    assert (runs / "robustpredict" / "smoke" / "results.json").exists()  # ran after the failure
    assert not (runs / "zzbroken").joinpath("smoke").exists()
    index = Path(out / "index.html")
    assert index.exists() and "robustpredict" in index.read_text()


def test_make_demo_uses_the_tool():
    make = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", "PKG=robustpredict"], capture_output=True,
                          text=True, check=True).stdout
    assert "tools/demo.py" in make and "robustpredict" in make
