"""``python -m paperworks report RUNS_DIR OUT_DIR`` builds the report."""

import sys

from paperworks.report import build_report


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] != "report":
        print("usage: python -m paperworks report RUNS_DIR OUT_DIR", file=sys.stderr)
        return 2
    index, summary = build_report(argv[1], argv[2])
    print(f"report: {index}\nsummary: {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
