#!/usr/bin/env python3
"""Run each package's ``quick`` experiment and build the report of those that succeeded (``make demo``).

    python tools/demo.py --bin .venv/bin --runs reports/runs --out reports [slug ...]

A failing package does not stop the others: its run directory is removed (so the report shows
only complete runs), the failure is listed at the end, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def packages() -> list[str]:
    return sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("slugs", nargs="*", help="packages (default: all)")
    ap.add_argument("--bin", type=Path, default=Path(sys.executable).parent, help="where the console scripts are")
    ap.add_argument("--runs", type=Path, default=ROOT / "reports" / "runs")
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    ap.add_argument("--experiment", default="quick")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per package")
    args = ap.parse_args(argv)
    slugs = args.slugs or packages()
    ok, failed = [], []
    for slug in slugs:
        run_dir = args.runs / slug / args.experiment
        shutil.rmtree(run_dir, ignore_errors=True)
        exe = args.bin / slug
        cmd = [str(exe), f"experiment={args.experiment}", f"hydra.run.dir={run_dir}"]
        print(f"== {slug} experiment={args.experiment}", flush=True)
        t0 = time.perf_counter()
        try:
            rc = subprocess.run(cmd, env=dict(os.environ, MPLBACKEND="Agg"), timeout=args.timeout).returncode
            why = f"exit status {rc}"
        except FileNotFoundError:
            rc, why = 127, f"{exe} is not installed"
        except subprocess.TimeoutExpired:
            rc, why = 124, f"timed out after {args.timeout:.0f} s"
        secs = time.perf_counter() - t0
        if rc == 0 and (run_dir / "results.json").exists():
            ok.append(slug)
            print(f"== {slug}: ok ({secs:.0f} s)", flush=True)
        else:
            why = why if rc else "no results.json"
            failed.append((slug, why))
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"== {slug}: FAILED ({why}, {secs:.0f} s)", flush=True)
    report_rc = 0
    if ok:
        print(f"\nreport of {len(ok)} package(s): {', '.join(ok)}", flush=True)
        report_rc = subprocess.run([sys.executable, str(ROOT / "tools" / "report.py"), str(args.runs),
                                    str(args.out)]).returncode
        if report_rc:
            failed.append(("report", f"tools/report.py exit status {report_rc}"))
    else:
        print("\nno package succeeded: no report built")
    if failed:
        print(f"\n{len(failed)} package(s) failed:")
        for slug, why in failed:
            print(f"  {slug}: {why}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
