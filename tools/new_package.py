#!/usr/bin/env python3
"""Scaffold ``packages/<slug>/`` from ``tools/template`` (``make new PKG=<slug>``).

The scaffold is a working package: it installs, its console script runs every experiment,
and it passes its own tests and the repo-level conformity checks. Replace its placeholder
method with the paper's.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "template"
SLUG_RE = re.compile(r"^[a-z][a-z0-9]{1,30}$")


def paper_title(slug: str, papers_dir: Path) -> str:
    """The paper's title from the briefs index beside the repo, or a placeholder."""
    index = papers_dir / "README.md"
    if index.exists():
        m = re.search(rf"\[{re.escape(slug)}\]\([^)]*\) — (.+?) — ", index.read_text(encoding="utf-8"))
        if m:
            return m.group(1).strip()
    return f"{slug} (title to fill in)"


def scaffold(slug: str, dest_root: Path, title: str | None = None, papers_dir: Path | None = None) -> Path:
    if not SLUG_RE.match(slug):
        raise ValueError(f"slug must be lowercase letters/digits, 2-31 chars, starting with a letter: {slug!r}")
    dest = dest_root / slug
    if dest.exists():
        raise FileExistsError(f"{dest} already exists")
    title = title or paper_title(slug, papers_dir or ROOT.parent / "shared" / "papers")
    for src in sorted(TEMPLATE.rglob("*")):
        if "__pycache__" in src.parts or src.suffix == ".pyc":
            continue
        rel = Path(str(src.relative_to(TEMPLATE)).replace("__slug__", slug))
        out = dest / rel
        if src.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text(encoding="utf-8").replace("__slug__", slug).replace("__title__", title)
        out.write_text(text, encoding="utf-8")
        shutil.copymode(src, out)
    return dest


def mark_available(slug: str, readme: Path = ROOT / "README.md") -> bool:
    """Flip the paper's row in the top README's table to ``available`` with a link to its README."""
    text = readme.read_text(encoding="utf-8")
    pat = re.compile(rf"^(\| `{re.escape(slug)}` \| .+? \| )planned \| .+? \|$", re.M)
    new, n = pat.subn(rf"\1available | [README](packages/{slug}/README.md) |", text)
    if n:
        readme.write_text(new, encoding="utf-8")
    return bool(n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("slug")
    ap.add_argument("--dest", type=Path, default=ROOT / "packages")
    ap.add_argument("--title")
    args = ap.parse_args(argv)
    try:
        dest = scaffold(args.slug, args.dest, args.title)
    except (ValueError, FileExistsError) as e:
        print(f"new_package: {e}", file=sys.stderr)
        return 2
    if args.dest.resolve() == (ROOT / "packages").resolve() and mark_available(args.slug):
        print(f"README.md: {args.slug} marked available")
    print(f"created {dest}; install it with: make setup (or pip install -c constraints.txt -e {dest}[test,plot])")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
