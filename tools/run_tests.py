#!/usr/bin/env python3
"""Run the repo-level and shared/ suites and each package's suite, each in its own pytest process.

    python tools/run_tests.py                    # everything, two suites at a time (-j 2)
    python tools/run_tests.py --pkg getolp       # one package (plus nothing else)
    python tools/run_tests.py --repo-only        # only the repo-level and shared/ suites (CI's repo job)
    python tools/run_tests.py --list             # the package slugs, one per line
    python tools/run_tests.py --list --changed origin/main --json   # CI matrix
    python tools/run_tests.py --list --touched 10 --max 3           # .ci/run: recently touched packages

Suites run in a pool of ``-j`` subprocesses, longest first (from the seconds recorded by earlier
runs), each with one BLAS/OpenMP/XLA thread so two suites share two cores; a suite's output is
captured and printed as one block when it ends. Prints a table (suite, seconds, passed, failed,
skipped, deselected: the ``slow``/``gpu`` tests left out) and ends with the plain line
``N passed, M failed``, where a suite that crashed or ran no test counts as (at least) one failure,
so the line and the exit status always agree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a change under any of these re-tests every package
INFRA = ("shared/", "tools/", "tests/", ".github/", ".ci/", "constraints.txt", "Makefile", "pyproject.toml")
BUDGET_S = 60.0
SUITE_TIMEOUT_S = 1800.0
# One thread per suite: with -j 2 on two cores, two suites that each spawn a full thread pool thrash.
# torch reads OMP_NUM_THREADS; JAX/XLA reads XLA_FLAGS.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    # real XLA flags only: XLA ignores every flag after a token without "--" (the TensorFlow-style
    # "intra_op_parallelism_threads=1" once here hid the suites' own fast-compile flags)
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
}
# Seconds per suite from a recent full run, used to start the longest suites first on a fresh clone;
# later runs on the same machine use what they measured (seconds_file()).
DEFAULT_SECONDS = ROOT / "tools" / "suite-seconds.json"


def packages() -> list[str]:
    return sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())


def changed_packages(base: str) -> list[str]:
    """Packages touched since ``base`` (all of them when infrastructure changed)."""
    out = subprocess.run(["git", "-C", str(ROOT), "diff", "--name-only", f"{base}...HEAD"],
                         capture_output=True, text=True)
    if out.returncode != 0:  # unknown base (e.g. first push): test everything
        return packages()
    files = [f for f in out.stdout.splitlines() if f]
    if any(f.startswith(INFRA) for f in files):
        return packages()
    touched = {f.split("/")[1] for f in files if f.startswith("packages/") and f.count("/") >= 2}
    return [p for p in packages() if p in touched]


def recently_touched(n_commits: int, limit: int) -> list[str]:
    """Up to ``limit`` packages touched by the last ``n_commits`` commits, most recent first.

    When none was touched (or git history is missing), one package chosen from HEAD's hash, so
    that successive commits exercise different packages.
    """
    known = packages()
    out = subprocess.run(["git", "-C", str(ROOT), "log", f"-{n_commits}", "--name-only", "--format="],
                         capture_output=True, text=True)
    seen: list[str] = []
    if out.returncode == 0:
        for f in out.stdout.splitlines():
            parts = f.split("/")
            if len(parts) >= 3 and parts[0] == "packages" and parts[1] in known and parts[1] not in seen:
                seen.append(parts[1])
    if seen:
        return seen[:limit]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    digest = head.stdout.strip() if head.returncode == 0 and head.stdout.strip() else "0"
    return [known[int(digest, 16) % len(known)]] if known else []


def seconds_file() -> Path:
    base = os.environ.get("PAPERWORKS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "paperworks")
    return Path(base) / "run_tests" / "suite-seconds.json"


def load_seconds() -> dict[str, float]:
    seconds: dict[str, float] = {}
    for f in (DEFAULT_SECONDS, seconds_file()):
        try:
            seconds.update(json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    return seconds


def save_seconds(results: list[dict]) -> None:
    f = seconds_file()
    try:
        old = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    old.update({r["suite"]: round(r["seconds"], 1) for r in results if r["passed"] or r["failed"]})
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp")
        tmp.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, f)
    except OSError:
        pass  # a read-only home only loses the ordering hint


def suite_env(jobs: int) -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    if jobs > 1:
        for k, v in THREAD_ENV.items():
            env.setdefault(k, v)
    return env


def junit_counts(xml: Path) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for suite in ET.parse(xml).getroot().iter("testsuite"):
        tests, fail, err, skip = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
        counts["failed"] += fail + err
        counts["skipped"] += skip
        counts["passed"] += tests - fail - err - skip
    return counts


def run_suite(name: str, path: Path, extra: list[str], env: dict[str, str],
              timeout: float = SUITE_TIMEOUT_S) -> dict:
    """Run one suite in its own pytest process; output captured, counts from its JUnit XML."""
    if not path.is_dir():
        return {"suite": name, "seconds": 0.0, "passed": 0, "failed": 1, "skipped": 0, "deselected": 0,
                "rc": -1, "ok": False, "status": "MISSING", "output": f"{path} does not exist\n"}
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
               "-p", "no:cacheprovider", "-q", f"--junitxml={xml}", str(path), *extra]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            output += f"\nrun_tests: {name} killed after {timeout:.0f} s\n"
            timed_out = True
        secs = time.perf_counter() - t0
        counts = junit_counts(xml) if xml.exists() else {"passed": 0, "failed": 0, "skipped": 0}
    m = re.findall(r"(\d+) deselected", output)
    deselected = int(m[-1]) if m else 0
    rc = proc.returncode
    if counts["passed"] == 0 and counts["failed"] == 0:
        status = "CRASHED" if rc not in (0, 5) else "NO TESTS"
    elif counts["failed"] or rc != 0:
        status = "FAILED"
    else:
        status = "ok"
    if timed_out:
        status = "TIMED OUT"
    ok = status == "ok"
    failed = counts["failed"] if ok or counts["failed"] else 1  # a crash / no tests / bad rc counts as one
    return {"suite": name, "seconds": secs, "passed": counts["passed"], "failed": failed,
            "skipped": counts["skipped"], "deselected": deselected, "rc": rc, "ok": ok, "status": status,
            "output": output}


def run_all(suites: list[tuple], extra: list[str], jobs: int, budgeted: set[str]) -> int:
    """Run ``(name, path, *suite_args)`` suites, ``jobs`` at a time; print the table and the closing line."""
    env = suite_env(jobs)
    seconds = load_seconds()
    order = sorted(range(len(suites)), key=lambda i: -seconds.get(suites[i][0], 0.0))
    results: dict[int, dict] = {}
    lock = threading.Lock()
    print(f"run_tests: {len(suites)} suite(s), {jobs} at a time", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_suite, suites[i][0], suites[i][1], [*suites[i][2:], *extra], env): i
                   for i in order}
        for fut in as_completed(futures):
            i = futures[fut]
            r = results[i] = fut.result()
            with lock:
                print(f"\n=== {r['suite']} ({r['seconds']:.1f} s, {r['status']}) ===\n{r['output'].rstrip()}",
                      flush=True)
    ordered = [results[i] for i in range(len(suites))]
    save_seconds(ordered)

    print("\n| suite | seconds | passed | failed | skipped | deselected | status |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in ordered:
        status = r["status"]
        if r["ok"] and r["seconds"] > BUDGET_S and r["suite"] in budgeted:
            status = f"ok (over the {BUDGET_S:.0f} s budget)"
        print(f"| {r['suite']} | {r['seconds']:.1f} | {r['passed']} | {r['failed']} | {r['skipped']} "
              f"| {r['deselected']} | {status} |")
    passed = sum(r["passed"] for r in ordered)
    failed = sum(r["failed"] for r in ordered)
    deselected = sum(r["deselected"] for r in ordered)
    bad = [r["suite"] for r in ordered if not r["ok"]]
    if deselected:
        print(f"\n{deselected} slow/gpu test(s) deselected (run them with: -- -m slow, or -m gpu on a GPU)")
    if bad:
        print(f"\nsuites not ok: {', '.join(bad)}")
    print(f"\n{passed} passed, {failed} failed", flush=True)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pkg", action="append", default=[], help="only this package (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the selected package slugs and exit")
    ap.add_argument("--changed", metavar="BASE", help="select packages changed since BASE")
    ap.add_argument("--touched", metavar="N", type=int, help="with --list: packages touched by the last N commits")
    ap.add_argument("--max", type=int, default=3, help="with --touched: at most this many (default 3)")
    ap.add_argument("--json", action="store_true", help="with --list: a JSON array")
    ap.add_argument("--no-repo", action="store_true", help="skip the repo-level and shared/ suites")
    ap.add_argument("--repo-only", action="store_true", help="only the repo-level and shared/ suites")
    ap.add_argument("--suite", action="append", default=[], type=Path, metavar="DIR",
                    help="run this test directory as a suite instead (repeatable)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="suites run at once (default 2)")
    ap.add_argument("pytest_args", nargs="*", help="passed to every pytest run (after --)")
    args = ap.parse_args(argv)

    if args.touched is not None:
        selected = recently_touched(args.touched, args.max)
    else:
        selected = changed_packages(args.changed) if args.changed else packages()
    if args.pkg:
        unknown = sorted(set(args.pkg) - set(packages()))
        if unknown:
            print(f"run_tests: unknown package(s) {unknown}; known: {packages()}", file=sys.stderr)
            return 2
        selected = [p for p in selected if p in args.pkg]
    if args.list:
        print(json.dumps(selected) if args.json else "\n".join(selected))
        return 0

    suites: list[tuple[str, Path]] = []
    if args.suite:
        suites = [(str(d), d.resolve()) for d in args.suite]
    else:
        if not args.no_repo and not args.pkg:
            shared = ROOT / "shared" / "tests"
            suites += [("repo (tests/)", ROOT / "tests"),
                       ("shared (paperworks)", shared, f"--ignore={shared / 'lm'}"),
                       ("shared.lm (paperworks.lm)", shared / "lm")]
        if not args.repo_only:
            suites += [(p, ROOT / "packages" / p / "tests") for p in selected]
    if not suites:
        print("run_tests: no suite selected\n\n0 passed, 1 failed")
        return 1
    return run_all(suites, args.pytest_args, args.jobs, budgeted=set(selected))


if __name__ == "__main__":
    raise SystemExit(main())
