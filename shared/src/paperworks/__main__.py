"""``python -m paperworks``: results tables, results of record, sweep aggregation, the schema.

    python -m paperworks tables packages/<slug> [...] [--check]   regenerate (or check) README tables
    python -m paperworks record RUN_DIR packages/<slug>            copy a paper/bench run's results.json
    python -m paperworks aggregate SWEEP_DIR [--out DIR]           pool a multirun over all its seeds
    python -m paperworks validate FILE_OR_DIR [...]                 check results files against the schema
    python -m paperworks schema                                     print the results.json JSON Schema
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paperworks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="regenerate README results tables from results/{paper,bench}.json")
    t.add_argument("packages", nargs="+", type=Path)
    t.add_argument("--check", action="store_true", help="only report READMEs that differ (exit 1)")
    r = sub.add_parser("record", help="make a run's results.json a result of record")
    r.add_argument("run", type=Path)
    r.add_argument("package", type=Path)
    a = sub.add_parser("aggregate", help="pool a Hydra multirun into one results.json")
    a.add_argument("sweep", type=Path)
    a.add_argument("--out", type=Path, default=None)
    v = sub.add_parser("validate", help="validate results.json files")
    v.add_argument("paths", nargs="+", type=Path)
    sub.add_parser("schema", help="print the JSON Schema of results.json")
    args = ap.parse_args(argv)

    try:
        if args.cmd == "tables":
            from paperworks.tables import update

            stale = [p for p in args.packages if not update(p, check=args.check)]
            for p in stale:
                print(f"{p / 'README.md'}: {'differs from its results of record' if args.check else 'updated'}")
            return 1 if (stale and args.check) else 0
        if args.cmd == "record":
            from paperworks.tables import record

            print(record(args.run, args.package))
            return 0
        if args.cmd == "aggregate":
            from paperworks.aggregate import aggregate

            doc = aggregate(args.sweep, args.out)
            out = (args.out or args.sweep / "aggregate") / "results.json"
            print(f"{out}: {len(doc['extra']['aggregated_from'])} jobs, {len(doc['seeds'])} seeds, "
                  f"{len(doc['claims'])} claims pooled, {len(doc['extra']['not_pooled'])} not pooled")
            for c in doc["claims"]:
                print(f"  {c['id']:<30} {c['verdict']:<14} {c['reason']}")
            return 0
        if args.cmd == "validate":
            from paperworks.results import load_results

            bad = 0
            for p in args.paths:
                files = sorted(p.rglob("results.json")) if p.is_dir() else [p]
                for f in files:
                    try:
                        load_results(f)
                        print(f"ok   {f}")
                    except (ValueError, OSError, json.JSONDecodeError) as e:
                        bad += 1
                        print(f"BAD  {f}: {e}")
            return 1 if bad else 0
        if args.cmd == "schema":
            from paperworks.results import SCHEMA

            print(json.dumps(SCHEMA, indent=2))
            return 0
    except (ValueError, FileNotFoundError) as e:
        print(f"paperworks {args.cmd}: {e}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
