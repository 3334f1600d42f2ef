#!/usr/bin/env python3
"""Build reports/index.html and reports/summary.md from the results.json files under RUNS_DIR.

    python tools/report.py reports/runs reports
"""

import argparse
import sys
from pathlib import Path

from paperworks.report import build_report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("runs", type=Path, nargs="?", default=Path("reports/runs"))
    ap.add_argument("out", type=Path, nargs="?", default=Path("reports"))
    args = ap.parse_args(argv)
    if not args.runs.is_dir():
        print(f"report: {args.runs} does not exist (run `make demo` first)", file=sys.stderr)
        return 2
    index, summary = build_report(args.runs, args.out)
    print(f"report written: {index.resolve()}\nsummary: {summary.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
