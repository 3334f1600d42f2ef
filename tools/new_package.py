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
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "template"
SLUG_RE = re.compile(r"^[a-z][a-z0-9]{1,30}$")


def paper_title(slug: str, readme: Path = ROOT / "README.md") -> str:
    """The paper's title from the table of papers in the top README, or a placeholder."""
    if readme.exists():
        m = re.search(rf"^\| `{re.escape(slug)}` \| (.+?) \| (?:planned|available) \|", readme.read_text(encoding="utf-8"),
                      re.M)
        if m:
            return m.group(1).strip()
    return f"{slug} (title to fill in)"


def scaffold(slug: str, dest_root: Path, title: str | None = None, readme: Path = ROOT / "README.md") -> Path:
    if not SLUG_RE.match(slug):
        raise ValueError(f"slug must be lowercase letters/digits, 2-31 chars, starting with a letter: {slug!r}")
    dest = dest_root / slug
    if dest.exists():
        raise FileExistsError(f"{dest} already exists")
    title = title or paper_title(slug, readme)
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
    pat = re.compile(rf"^(\| `{re.escape(slug)}` \| .+? \| )planned \| [^|]+? \|", re.M)
    new, n = pat.subn(rf"\1available | [README](packages/{slug}/README.md) |", text)
    if n:
        readme.write_text(new, encoding="utf-8")
    return bool(n)


def install_command(dest: Path, python: str) -> list[str]:
    """pip-install the new package together with shared/ (paperworks is not on PyPI: never alone)."""
    return [python, "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"),
            "-e", f"{ROOT / 'shared'}[test,plot]", "-e", f"{dest}[test,plot]"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("slug")
    ap.add_argument("--dest", type=Path, default=ROOT / "packages")
    ap.add_argument("--title")
    ap.add_argument("--readme", type=Path, help="the README whose table to update (default: the repo's, when --dest is packages/)")
    ap.add_argument("--install", action="store_true", help="then pip-install it with shared/ (make new)")
    ap.add_argument("--python", default=sys.executable, help="with --install: the Python whose pip installs")
    args = ap.parse_args(argv)
    if args.readme is None and args.dest.resolve() == (ROOT / "packages").resolve():
        args.readme = ROOT / "README.md"
    dest = args.dest / args.slug
    if dest.exists():  # never remove what we did not create
        print(f"new_package: {dest} already exists", file=sys.stderr)
        return 2
    readme_before = args.readme.read_bytes() if args.readme and args.readme.exists() else None
    try:
        scaffold(args.slug, args.dest, args.title, args.readme or ROOT / "README.md")
        if readme_before is not None and mark_available(args.slug, args.readme):
            print(f"{args.readme.name}: {args.slug} marked available")
        if args.install:
            cmd = install_command(dest, args.python)
            print("+ " + " ".join(cmd), flush=True)
            if subprocess.run(cmd).returncode != 0:
                raise RuntimeError(f"installing {dest} failed")
    except (ValueError, FileExistsError, RuntimeError, OSError, KeyboardInterrupt) as e:
        # leave nothing behind: remove the scaffold and put the README back as it was
        shutil.rmtree(dest, ignore_errors=True)
        if readme_before is not None:
            args.readme.write_bytes(readme_before)
        print(f"new_package: {e}; nothing was left behind", file=sys.stderr)
        return 2 if isinstance(e, (ValueError, FileExistsError)) else 1
    hint = "installed into the venv" if args.install else f"install it with: make new, or pip install -c constraints.txt -e shared -e {dest}[test,plot]"
    print(f"created {dest}; {hint}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
