"""What every package's console script shares through paperworks: typed keys and --help."""

import subprocess

from paperworks.testing import console_script

PKG = "robustpredict"


def test_a_mistyped_common_key_fails_naming_the_key(tmp_path):
    proc = subprocess.run([console_script(PKG), "seed=abc", f"hydra.run.dir={tmp_path}"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0
    assert "'seed'" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "results.json").exists()


def test_help_lists_the_four_experiments():
    out = subprocess.run([console_script(PKG), "--help"], capture_output=True, text=True, timeout=300, check=True).stdout
    lines = [ln for ln in out.splitlines() if ln.startswith("  ")]
    for exp in ("smoke", "quick", "paper", "bench"):
        row = next((ln for ln in lines if ln.split()[0] == exp), None)
        assert row and len(row.split()) > 2, f"--help lists {exp} with what it measures: {out}"
