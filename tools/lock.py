#!/usr/bin/env python3
"""Write constraints.txt: every third-party package at one tested version (``make lock``).

    python tools/lock.py                  # resolve and write constraints.txt
    python tools/lock.py --output FILE    # somewhere else

Resolves, with pip-tools' ``pip-compile``, the dependencies and *every* extra of shared/ and of
each package (given as editable local paths, so the unpublished ``paperworks`` packages resolve),
plus the developer tooling in tools/dev-tools.txt, keeping the current pins where they still resolve
(``pip-compile --upgrade`` by hand moves everything forward). The paperworks packages themselves are not
pinned (they are the code under test); torch keeps its public version (``torch==2.13.0``) so the
same line selects the CPU build here (``+cpu`` wheel on local disk) and in CI (the CPU index).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"
HEADER = f"""\
# constraints.txt: the one place exact pins live; always used as `pip install -c constraints.txt ...`.
# Written by `make lock` (tools/lock.py: pip-compile over shared/ and every packages/<slug>/, all
# extras, plus tools/dev-tools.txt) on Python 3.11, then tested by `make test`. Do not edit by hand:
# change a pyproject and run `make lock`. The paperworks packages themselves are not pinned.
# {TORCH}: the CPU build (the local-disk wheel is 2.13.0+cpu; CI takes it from the CPU index);
# a bare `torch` would pull a multi-GB CUDA build.
"""


def projects(root: Path = ROOT) -> list[Path]:
    pkgs = sorted(p.parent for p in (root / "packages").glob("*/pyproject.toml"))
    return [root / "shared", *pkgs]


def lock_input(root: Path = ROOT) -> str:
    """The pip-compile input: each project editable, with all of its extras, and the dev tools."""
    lines = []
    for proj in projects(root):
        extras = sorted(tomllib.loads((proj / "pyproject.toml").read_text(encoding="utf-8"))
                        .get("project", {}).get("optional-dependencies", {}))
        lines.append(f"-e {proj}[{','.join(extras)}]" if extras else f"-e {proj}")
    lines.append(f"-r {root / 'tools' / 'dev-tools.txt'}")
    lines.append(TORCH)
    return "\n".join(lines) + "\n"


def postprocess(compiled: str, input_path: str = "") -> str:
    """pip-compile's output as constraints: no editable or paperworks lines, torch's public version."""
    out = []
    for line in compiled.splitlines():
        s = line.strip()
        if s.startswith("-e ") or re.match(r"^paperworks(-[a-z0-9]+)?==", s):
            continue
        if re.match(r"^torch==", s):
            line = re.sub(r"^torch==[^\s]+", TORCH, line)
        if input_path:
            line = line.replace(input_path, "lock input")
        out.append(line.replace(f"{ROOT}/", ""))
    body = "\n".join(out).strip("\n")
    return HEADER + "\n" + body + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", type=Path, default=ROOT / "constraints.txt")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "lock.in"
        src.write_text(lock_input(), encoding="utf-8")
        raw = Path(tmp) / "lock.txt"
        if args.output.exists():
            # pip-compile takes an existing output file's pins as preferences: a new package's
            # dependencies are fitted around what is locked (and tested) instead of re-resolving
            # everything to the newest releases, which can move shared pins backwards.
            raw.write_text(args.output.read_text(encoding="utf-8"), encoding="utf-8")
        cmd = [sys.executable, "-m", "piptools", "compile", "--quiet", "--no-header", "--strip-extras",
               "--no-emit-index-url", "--no-emit-find-links", "--no-emit-trusted-host",
               "--annotation-style", "line", "--resolver", "backtracking",
               "--output-file", str(raw), str(src)]
        proc = subprocess.run(cmd, cwd=tmp)
        if proc.returncode != 0:
            print("lock: pip-compile failed; constraints.txt left as it was", file=sys.stderr)
            return proc.returncode
        text = postprocess(raw.read_text(encoding="utf-8"), str(src))
    tmp_out = args.output.with_suffix(".tmp")
    tmp_out.write_text(text, encoding="utf-8")
    tmp_out.replace(args.output)
    n = sum(1 for line in text.splitlines() if "==" in line and not line.startswith("#"))
    print(f"lock: {args.output} pins {n} packages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
