#!/usr/bin/env python3
"""The top README's table of papers: per available package, the verdict counts of its results of record.

    python tools/papers_table.py           # rewrite README.md's table
    python tools/papers_table.py --check   # exit 1 when it differs (the repo tests call this)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = "| slug | paper | status | package | claims of record: supported / not supported / inconclusive |"
RULE = "|---|---|---|---|---|"
ROW = re.compile(r"^\| `(\w+)` \| (.+?) \| (planned|available) \| ([^|]+?) \|(?: [^|]* \|)?$", re.M)


def record_counts(pkg: Path) -> str:
    parts = []
    for name in ("paper", "bench", "bench_cuda"):
        f = pkg / "results" / f"{name}.json"
        if not f.exists():
            continue
        claims = json.loads(f.read_text(encoding="utf-8")).get("claims", [])
        n = [sum(c["verdict"] == v for c in claims) for v in ("supported", "not supported", "inconclusive")]
        parts.append(f"{name} {n[0]} / {n[1]} / {n[2]}")
    return " · ".join(parts) if parts else "—"


def render(text: str, root: Path = ROOT) -> str:
    def row(m):
        slug, title, status, link = m.groups()
        counts = record_counts(root / "packages" / slug) if status == "available" else "—"
        return f"| `{slug}` | {title} | {status} | {link} | {counts} |"

    text = re.sub(r"^\| slug \| paper \| status \| package \|.*$", HEADER, text, count=1, flags=re.M)
    text = re.sub(r"^(" + re.escape(HEADER) + r")\n\|---\|---\|---\|---\|(?:---\|)?$", r"\1\n" + RULE, text,
                  count=1, flags=re.M)
    return ROW.sub(row, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = ap.parse_args(argv)
    old = args.readme.read_text(encoding="utf-8")
    new = render(old, args.readme.parent)
    if old == new:
        return 0
    if args.check:
        print(f"{args.readme}: the table of papers differs from the results of record; "
              "run `python tools/papers_table.py`", file=sys.stderr)
        return 1
    args.readme.write_text(new, encoding="utf-8")
    print(f"{args.readme}: table of papers updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
