"""The ``results.json`` schema, claims with computed verdicts, and atomic writers.

A claim's verdict is never typed in: it is computed from the numbers by a rule, and the
rule and its parameters are stored beside the numbers so :func:`validate_results`
can recompute every verdict from the file alone.

Rules:
- ``threshold``: is the method's value on the right side of a fixed threshold?
  With a CI: ``supported`` if the whole interval is on the right side, ``not supported``
  if the whole interval is on the wrong side, ``inconclusive`` otherwise.
  Without a CI (a deterministic measurement): ``supported`` or ``not supported``.
- ``compare``: is the method better than the baseline by at least ``margin``?
  With CIs on both: ``supported`` if the intervals are separated in the claimed direction
  (by ``margin``), ``not supported`` if they are separated the other way (or the method is
  not better at all without CIs), ``inconclusive`` otherwise.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from paperworks.stats import Estimate

SCHEMA_VERSION = 1
VERDICTS = ("supported", "not supported", "inconclusive")
EXPERIMENTS = ("smoke", "quick", "paper", "bench")
_REQUIRED = ("schema_version", "package", "version", "git_commit", "experiment", "seeds", "config",
             "machine", "timings", "claims", "created")


def _as_estimate(x) -> Estimate:
    if isinstance(x, Estimate):
        return x
    if isinstance(x, Mapping):
        return Estimate.from_dict(dict(x))
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return Estimate(float(x))
    raise TypeError(f"expected an Estimate, a dict or a number, got {type(x).__name__}")


def _check_better(better: str) -> None:
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")


def threshold_verdict(est: Estimate, threshold: float, better: str) -> str:
    """Verdict of "the value is above (better='higher') / below (better='lower') threshold"."""
    _check_better(better)
    est = _as_estimate(est)
    sign = 1.0 if better == "higher" else -1.0
    if not math.isfinite(est.value):
        return "inconclusive"
    if est.lower is None or est.upper is None:
        return "supported" if sign * (est.value - threshold) >= 0 else "not supported"
    lo, hi = (est.lower, est.upper) if sign > 0 else (-est.upper, -est.lower)
    t = sign * threshold
    if lo >= t:
        return "supported"
    if hi < t:
        return "not supported"
    return "inconclusive"


def compare(method: Estimate, baseline: Estimate, better: str, margin: float = 0.0) -> str:
    """Verdict of "method beats baseline by at least ``margin``" in the ``better`` direction.

    Beating is strict: a tie (equal values, or touching intervals, with ``margin=0``) is not a win.
    """
    _check_better(better)
    m, b = _as_estimate(method), _as_estimate(baseline)
    sign = 1.0 if better == "higher" else -1.0
    if not (math.isfinite(m.value) and math.isfinite(b.value)):
        return "inconclusive"
    have_ci = None not in (m.lower, m.upper, b.lower, b.upper)
    if not have_ci:
        diff = sign * (m.value - b.value)
        return "supported" if diff >= margin and diff > 0 else "not supported"
    if sign > 0:
        gap = m.lower - b.upper
        if gap >= margin and gap > 0:
            return "supported"
        if m.upper < b.lower:
            return "not supported"
    else:
        gap = b.lower - m.upper
        if gap >= margin and gap > 0:
            return "supported"
        if m.lower > b.upper:
            return "not supported"
    return "inconclusive"


@dataclass
class Claim:
    """One headline claim of a paper, measured.

    Build it with :meth:`threshold` or :meth:`compare`; the verdict is computed.
    """

    id: str
    statement: str
    metric: str
    method: Estimate
    verdict: str
    rule: dict
    baselines: dict[str, Estimate] = field(default_factory=dict)
    notes: str = ""

    @classmethod
    def threshold(cls, id: str, statement: str, metric: str, value, *, threshold: float, better: str,
                  baselines: Mapping[str, Any] | None = None, notes: str = "") -> Claim:
        est = _as_estimate(value)
        rule = {"kind": "threshold", "threshold": float(threshold), "better": better}
        return cls(id, statement, metric, est, threshold_verdict(est, threshold, better), rule,
                   {k: _as_estimate(v) for k, v in (baselines or {}).items()}, notes)

    @classmethod
    def compare(cls, id: str, statement: str, metric: str, value, *, baseline: str,
                baselines: Mapping[str, Any], better: str, margin: float = 0.0, notes: str = "") -> Claim:
        if baseline not in baselines:
            raise ValueError(f"baseline {baseline!r} is not among baselines {sorted(baselines)}")
        est = _as_estimate(value)
        bases = {k: _as_estimate(v) for k, v in baselines.items()}
        rule = {"kind": "compare", "baseline": baseline, "better": better, "margin": float(margin)}
        return cls(id, statement, metric, est, compare(est, bases[baseline], better, margin), rule, bases, notes)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "statement": self.statement,
            "metric": self.metric,
            "method": self.method.to_dict(),
            "baselines": {k: v.to_dict() for k, v in self.baselines.items()},
            "rule": dict(self.rule),
            "verdict": self.verdict,
            "notes": self.notes,
        }


def recompute_verdict(claim: Mapping) -> str:
    """The verdict implied by a stored claim's numbers and rule."""
    rule = claim["rule"]
    method = Estimate.from_dict(claim["method"])
    if rule["kind"] == "threshold":
        return threshold_verdict(method, rule["threshold"], rule["better"])
    if rule["kind"] == "compare":
        base = Estimate.from_dict(claim["baselines"][rule["baseline"]])
        return compare(method, base, rule["better"], rule.get("margin", 0.0))
    raise ValueError(f"unknown rule kind {rule['kind']!r}")


# writing ---------------------------------------------------------------------------------

def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def _jsonable(x):
    """Convert numpy scalars/arrays, Paths, Estimates and OmegaConf nodes for json.dumps."""
    if isinstance(x, Estimate):
        return x.to_dict()
    if isinstance(x, Claim):
        return x.to_dict()
    if isinstance(x, Path):
        return str(x)
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "item"):
        return x.item()
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(x, (DictConfig, ListConfig)):
            return OmegaConf.to_container(x, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _clean_floats(x):
    """NaN/inf are not JSON: store them as None so the file stays standard JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean_floats(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean_floats(v) for v in x]
    return x


def git_commit(path: Path | str | None = None) -> str:
    """The HEAD commit of the repository holding ``path``, or ``unknown``.

    ``+dirty`` is appended when the code that ran differs from that commit: uncommitted or
    untracked changes under ``path`` (the package) or the repository's ``shared/``; other
    packages' edits do not count. ``PAPERWORKS_GIT_COMMIT`` overrides (installs outside a checkout).
    """
    env = os.environ.get("PAPERWORKS_GIT_COMMIT")
    if env:
        return env
    where = Path(path or Path.cwd()).resolve()
    where = where if where.is_dir() else where.parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        top = Path(git("rev-parse", "--show-toplevel"))
        scopes = [str(where)] + ([str(top / "shared")] if (top / "shared").is_dir() else [])
        dirty = git("status", "--porcelain", "--", *scopes)
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _requirement_names(dist: str) -> list[str]:
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    names = []
    for r in reqs:
        if "extra ==" in r:
            continue
        name = r.split(";")[0].strip()
        for sep in "<>=!~[ (":
            name = name.split(sep)[0]
        names.append(name)
    return names


def machine_info(dist: str | None = None, device: str | None = None) -> dict:
    """Cores, platform, Python, and the versions of ``dist``'s declared dependencies."""
    libs = {n: _dist_version(n) for n in ["paperworks", "numpy", "scipy", *(_requirement_names(dist) if dist else [])]}
    info = {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "libraries": {k: v for k, v in libs.items() if v is not None},
        "device": device or "cpu",
    }
    if device and device.startswith("cuda") and "torch" in sys.modules:
        import torch

        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def write_metrics_csv(path, rows: Iterable[Mapping]) -> Path:
    """Write a list of flat dicts as CSV (columns: the union of keys, in first-seen order)."""
    rows = list(rows)
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({k: _jsonable_scalar(v) for k, v in r.items()})
    return atomic_write_text(path, buf.getvalue())


def _jsonable_scalar(v):
    if hasattr(v, "item"):
        return v.item()
    return v


def write_results(out_dir, *, package: str, experiment: str, config: Any, claims: Iterable[Claim],
                  seeds: Iterable[int], timings: Mapping[str, float], metrics: Iterable[Mapping] = (),
                  device: str = "cpu", extra: Mapping | None = None, source: Path | str | None = None,
                  commit: str | None = None) -> dict:
    """Write ``results.json`` (and ``metrics.csv``) into ``out_dir``; return the document.

    ``source``: a path inside the package's checkout, used to find the git commit. ``commit``: the
    commit the run started from (see :func:`git_commit`); taken now from ``source`` when omitted.
    """
    out_dir = Path(out_dir)
    dist = f"paperworks-{package}"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "package": package,
        "version": _dist_version(dist) or "unknown",
        "git_commit": commit or git_commit(source),
        "experiment": experiment,
        "seeds": [int(s) for s in seeds],
        "config": config,
        "machine": machine_info(dist, device),
        "timings": {k: float(v) for k, v in timings.items()},
        "claims": [c.to_dict() if isinstance(c, Claim) else dict(c) for c in claims],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "extra": dict(extra or {}),
    }
    doc = json.loads(json.dumps(doc, default=_jsonable))
    doc = _clean_floats(doc)
    validate_results(doc)
    atomic_write_text(out_dir / "results.json", json.dumps(doc, indent=2, allow_nan=False) + "\n")
    rows = list(metrics)
    if rows:
        write_metrics_csv(out_dir / "metrics.csv", rows)
    return doc


# reading and validation ----------------------------------------------------------------------

def validate_results(doc: Mapping) -> None:
    """Raise ``ValueError`` unless ``doc`` follows the schema and every verdict matches its numbers."""
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        raise ValueError(f"results.json lacks {missing}")
    if doc["experiment"] not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {EXPERIMENTS}, got {doc['experiment']!r}")
    if not isinstance(doc["claims"], list) or not doc["claims"]:
        raise ValueError("results.json must carry at least one claim")
    for c in doc["claims"]:
        for k in ("id", "statement", "metric", "method", "baselines", "rule", "verdict"):
            if k not in c:
                raise ValueError(f"claim {c.get('id', '?')!r} lacks {k!r}")
        if c["verdict"] not in VERDICTS:
            raise ValueError(f"claim {c['id']!r}: verdict {c['verdict']!r} not in {VERDICTS}")
        got = recompute_verdict(c)
        if got != c["verdict"]:
            raise ValueError(f"claim {c['id']!r}: stored verdict {c['verdict']!r} but its numbers give {got!r}")
    if not isinstance(doc["seeds"], list):
        raise ValueError("seeds must be a list")


def load_results(path) -> dict:
    """Read and validate a ``results.json`` (a file or a run directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    validate_results(doc)
    return doc
