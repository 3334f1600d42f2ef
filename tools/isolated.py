#!/usr/bin/env python3
"""Test packages the way a CI package job does (``make test-isolated PKG=<slug>``).

    python tools/isolated.py robustpredict [mkscp ...]
    python tools/isolated.py --dry-run robustpredict      # print the commands only

For each package: a fresh virtual environment in a temporary directory, into which only
``shared[test]`` and ``packages/<slug>[test]`` are installed (with ``-c constraints.txt``), then
``pip check`` and ``tools/run_tests.py --pkg <slug>``. An import that the package does not declare
fails here, where ``make test``'s shared venv would hide it. The [plot] extra is left out on
purpose: a package's suite must pass with what its [test] extra declares.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commands(slug: str, venv: Path, python: str = sys.executable) -> list[list[str]]:
    vpy = str(venv / "bin" / "python")
    return [
        [python, "-m", "venv", str(venv)],
        [vpy, "-m", "pip", "install", "-q", "--no-compile", "-c", "constraints.txt",
         "-e", "shared[test]", "-e", f"packages/{slug}[test]"],
        [vpy, "-m", "pip", "check"],
        [vpy, "tools/run_tests.py", "--pkg", slug],
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("slugs", nargs="+")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args(argv)
    known = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
    unknown = [s for s in args.slugs if s not in known]
    if unknown:
        print(f"isolated: unknown package(s) {unknown}; known: {known}", file=sys.stderr)
        return 2
    failed = []
    for slug in args.slugs:
        tmp = Path(tempfile.mkdtemp(prefix=f"paperworks-{slug}-"))
        try:
            t0 = time.perf_counter()
            for cmd in commands(slug, tmp / "venv"):
                print("+ " + " ".join(cmd), flush=True)
                if args.dry_run:
                    continue
                # a clean environment for the child venv: no inherited VIRTUAL_ENV or PYTHONPATH
                env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
                if subprocess.run(cmd, cwd=ROOT, env=env).returncode != 0:
                    failed.append(slug)
                    break
            print(f"isolated: {slug} {'FAILED' if slug in failed else 'ok'} in {time.perf_counter() - t0:.0f} s",
                  flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print(f"isolated: not ok: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
