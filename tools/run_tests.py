#!/usr/bin/env python3
"""Run the repo-level tests, then each package's suite in its own pytest process.

    python tools/run_tests.py                    # everything
    python tools/run_tests.py --pkg getolp       # one package (plus nothing else)
    python tools/run_tests.py --list             # the package slugs, one per line
    python tools/run_tests.py --list --changed origin/main --json   # CI matrix

Prints a table (suite, seconds, passed, failed, skipped) and ends with the plain line
``N passed, M failed``. Exits non-zero if anything failed or a suite ran no tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a change under any of these re-tests every package
INFRA = ("shared/", "tools/", "tests/", ".github/", ".ci/", "constraints.txt", "Makefile", "pyproject.toml")
BUDGET_S = 60.0


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


def run_suite(name: str, path: Path, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
               "-p", "no:cacheprovider", "-q", f"--junitxml={xml}", str(path), *extra]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, MPLBACKEND="Agg"))
        secs = time.perf_counter() - t0
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        if xml.exists():
            for suite in ET.parse(xml).getroot().iter("testsuite"):
                tests, fail, err, skip = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
                counts["failed"] += fail + err
                counts["skipped"] += skip
                counts["passed"] += tests - fail - err - skip
        elif proc.returncode != 0:
            counts["failed"] += 1  # collection crashed before any report
    ok = proc.returncode == 0 and counts["failed"] == 0 and counts["passed"] > 0
    return {"suite": name, "seconds": secs, **counts, "rc": proc.returncode, "ok": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pkg", action="append", default=[], help="only this package (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the selected package slugs and exit")
    ap.add_argument("--changed", metavar="BASE", help="select packages changed since BASE")
    ap.add_argument("--json", action="store_true", help="with --list: a JSON array")
    ap.add_argument("--no-repo", action="store_true", help="skip the repo-level and shared/ suites")
    ap.add_argument("pytest_args", nargs="*", help="passed to every pytest run (after --)")
    args = ap.parse_args(argv)

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
    if not args.no_repo and not args.pkg:
        suites += [("repo (tests/)", ROOT / "tests"), ("shared (paperworks)", ROOT / "shared" / "tests")]
    suites += [(p, ROOT / "packages" / p / "tests") for p in selected]

    results = []
    for name, path in suites:
        print(f"\n=== {name} ===", flush=True)
        if not path.is_dir():
            results.append({"suite": name, "seconds": 0.0, "passed": 0, "failed": 1, "skipped": 0, "rc": -1, "ok": False})
            print(f"{path} does not exist", flush=True)
            continue
        results.append(run_suite(name, path, args.pytest_args))

    print("\n| suite | seconds | passed | failed | skipped | status |")
    print("|---|---:|---:|---:|---:|---|")
    for r in results:
        status = "ok" if r["ok"] else ("NO TESTS" if r["passed"] == 0 and r["failed"] == 0 else "FAILED")
        if r["ok"] and r["seconds"] > BUDGET_S and r["suite"] in selected:
            status = f"ok (over the {BUDGET_S:.0f} s budget)"
        print(f"| {r['suite']} | {r['seconds']:.1f} | {r['passed']} | {r['failed']} | {r['skipped']} | {status} |")
    passed = sum(r["passed"] for r in results)
    failed = sum(r["failed"] for r in results)
    bad = [r["suite"] for r in results if not r["ok"]]
    if bad:
        print(f"\nsuites not ok: {', '.join(bad)}")
    print(f"\n{passed} passed, {failed} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
