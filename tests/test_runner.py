"""tools/run_tests.py: two suites at a time, blocks not interleaved, the closing line agrees with the exit status."""

import json
import re
import subprocess
import sys

import conformity

ROOT = conformity.ROOT

OK = '''
import os, time
import pytest

def test_threads_pinned():
    time.sleep(0.3)
    flags = os.environ["XLA_FLAGS"].split()
    assert os.environ["OMP_NUM_THREADS"] == "1" and "--xla_cpu_multi_thread_eigen=false" in flags
    assert all(f.startswith("--") for f in flags)   # XLA drops every flag after a non-flag token
    print("OK-SUITE-LINE")

@pytest.mark.slow
def test_slow():
    raise AssertionError("slow tests are deselected by default")

@pytest.mark.gpu
def test_gpu():
    raise AssertionError("gpu tests are deselected by default")
'''
BAD = '''
def test_fails():
    print("BAD-SUITE-LINE")
    assert 1 == 2
'''
EMPTY = '''
def helper():
    return 1
'''


def make_suites(tmp_path):
    dirs = {}
    for name, body in (("oksuite", OK), ("badsuite", BAD), ("emptysuite", EMPTY)):
        d = tmp_path / name
        d.mkdir()
        (d / f"test_{name}.py").write_text(body)
        dirs[name] = d
    return dirs


def run(tmp_path, *args, seconds=None):
    cache = tmp_path / "cache"
    if seconds:
        (cache / "run_tests").mkdir(parents=True, exist_ok=True)
        (cache / "run_tests" / "suite-seconds.json").write_text(json.dumps(seconds))
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("OMP_NUM_THREADS", "XLA_FLAGS")}
    env["PAPERWORKS_CACHE"] = str(cache)
    return subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def table_row(out, suite):
    (row,) = [line for line in out.splitlines() if line.startswith(f"| {suite} |")]
    return [c.strip() for c in row.strip("|").split("|")]


def test_counts_no_tests_as_failed_and_lists_deselected(tmp_path):
    d = make_suites(tmp_path)
    proc = run(tmp_path, "-j", "2", "--suite", str(d["oksuite"]), "--suite", str(d["badsuite"]),
               "--suite", str(d["emptysuite"]))
    out = proc.stdout
    assert proc.returncode == 1
    assert out.rstrip().splitlines()[-1] == "1 passed, 2 failed"  # the empty suite counts as one failure
    ok = table_row(out, str(d["oksuite"]))
    assert ok[2:7] == ["1", "0", "0", "2", "ok"]  # passed, failed, skipped, deselected (slow + gpu), status
    assert table_row(out, str(d["emptysuite"]))[-1] == "NO TESTS"
    assert table_row(out, str(d["badsuite"]))[-1] == "FAILED"
    assert "2 slow/gpu test(s) deselected" in out
    # each suite's output is one block under its own header: nothing of another suite inside it
    blocks = re.split(r"\n=== ", out)
    bad_block = next(b for b in blocks if b.startswith(str(d["badsuite"])))
    assert "assert 1 == 2" in bad_block and "oksuite" not in bad_block.split("\n", 1)[1]


def test_all_ok_exits_zero_and_longest_runs_first(tmp_path):
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"test_{name}.py").write_text("def test_it():\n    assert True\n")
    a, b = str(tmp_path / "first"), tmp_path / "second"
    proc = run(tmp_path, "-j", "1", "--suite", a, "--suite", str(b), seconds={str(b): 100.0, a: 1.0})
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "2 passed, 0 failed"
    assert proc.stdout.index(f"=== {b} (") < proc.stdout.index(f"=== {a} (")  # the longer one started first
    recorded = json.loads((tmp_path / "cache" / "run_tests" / "suite-seconds.json").read_text())
    assert recorded[a] < 100 and recorded[str(b)] < 100  # re-measured


def test_repo_only_and_pkg_selection():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--repo-only" in out and "-j JOBS" in out
