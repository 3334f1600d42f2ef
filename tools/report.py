#!/usr/bin/env python3
"""Build reports/index.html and reports/summary.md from the results.json files under RUNS_DIR.

    python tools/report.py reports/runs reports

The results of record (packages/<slug>/results/{paper,bench}.json) and the packages' README
titles are found under --records (default: the repository's packages/ folder).
"""

import argparse
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="?", default=Path("reports/runs"))
    ap.add_argument("out", type=Path, nargs="?", default=Path("reports"))
    ap.add_argument("--records", type=Path, default=None,
                    help="folder of packages holding <slug>/results/*.json (default: <repo>/packages)")
    args = ap.parse_args(argv)
    if not args.runs.is_dir():
        print(f"report: {args.runs} does not exist (run `make demo` first)", file=sys.stderr)
        return 2
    if args.records is not None and not args.records.is_dir():
        print(f"report: {args.records} does not exist", file=sys.stderr)
        return 2
    sys.path.insert(0, str(TOOLS))
    from report_builder import build_report  # imported late: a missing RUNS_DIR fails fast

    repo = TOOLS.parent
    records = args.records if args.records is not None else (repo / "packages" if (repo / "packages").is_dir() else None)
    index, summary = build_report(args.runs, args.out, records_root=records)
    print(f"report written: {index.resolve()}\nsummary: {summary.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
