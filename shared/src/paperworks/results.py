"""The ``results.json`` schema, claims and checks with computed verdicts, and atomic writers.

A claim's verdict is never typed in: it is computed from the numbers by a rule
(:mod:`paperworks.rules`), and the rule and its parameters are stored beside the numbers,
so :func:`validate_results` recomputes every verdict from the file alone.

``claims`` are the paper's headline claims, measured; ``checks`` are identities and sanity
properties that hold by construction (a solver's constraint residual, a reconstruction
error): stored and shown apart, never counted among the claims.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from paperworks import rules as _rules
from paperworks.rules import VERDICTS, as_estimate, check_better, describe
from paperworks.stats import Estimate, estimate, paired_difference

SCHEMA_VERSION = 2
SCHEMA_VERSIONS = (2,)
#: every package has these four; users may run experiments of their own names too
EXPERIMENTS = ("smoke", "quick", "paper", "bench")
EXPERIMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_NUM = {"type": ["number", "null", "string"]}
_ESTIMATE = {
    "type": "object",
    "required": ["value", "lower", "upper", "n", "level", "method"],
    "properties": {
        "value": _NUM, "lower": _NUM, "upper": _NUM,
        "n": {"type": "integer", "minimum": 0},
        "level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "method": {"type": "string"},
        "n_censored": {"type": "integer", "minimum": 0},
        "bounds": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "samples": {"type": "array", "items": _NUM},
    },
    "additionalProperties": False,
}
_CLAIM = {
    "type": "object",
    "required": ["id", "statement", "metric", "method", "baselines", "rule", "verdict", "reason"],
    "properties": {
        "id": {"type": "string", "pattern": r"^[A-Za-z0-9_.:-]+$"},
        "statement": {"type": "string", "minLength": 1},
        "metric": {"type": "string"},
        "method": _ESTIMATE,
        "baselines": {"type": "object", "additionalProperties": _ESTIMATE},
        "differences": {"type": "object", "additionalProperties": _ESTIMATE},
        "rule": {
            "type": "object",
            "required": ["kind"],
            "properties": {
                "kind": {"enum": list(_rules.KINDS)},
                "better": {"enum": ["higher", "lower"]},
                "threshold": {"type": "number"}, "target": {"type": "number"}, "tol": {"type": "number", "minimum": 0},
                "margin": {"type": "number"}, "baseline": {"type": "string"},
                "baselines": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "paired": {"type": "boolean"}, "exact": {"type": "boolean"}, "scale": {"enum": ["linear", "log"]},
                "requires": {"type": "array", "items": {
                    "type": "object", "required": ["what", "met"],
                    "properties": {"what": {"type": "string"}, "met": {"type": "boolean"}},
                    "additionalProperties": False}},
                "words": {"type": "string"},
            },
            "additionalProperties": False,
        },
        "verdict": {"enum": list(VERDICTS)},
        "reason": {"type": "string"},
        "notes": {"type": "string"},
    },
    "additionalProperties": False,
}
#: the JSON Schema of ``results.json`` (draft 2020-12); :func:`validate_results` enforces it
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "paperworks results.json",
    "type": "object",
    "required": ["schema_version", "package", "version", "git_commit", "experiment", "seeds", "config",
                 "machine", "timings", "claims", "checks", "created"],
    "properties": {
        "schema_version": {"type": "integer"},
        "package": {"type": "string", "pattern": r"^[a-z][a-z0-9_]*$"},
        "version": {"type": "string"},
        "git_commit": {"type": "string"},
        "experiment": {"type": "string", "pattern": EXPERIMENT_NAME.pattern},
        "seeds": {"type": "array", "items": {"type": "integer"}},
        "config": {},
        "machine": {"type": "object", "required": ["cores", "python"]},
        "timings": {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
        "claims": {"type": "array", "items": _CLAIM},
        "checks": {"type": "array", "items": _CLAIM},
        "created": {"type": "string"},
        "extra": {"type": "object"},
    },
}


def _requires(requires) -> list[dict]:
    if requires is None:
        return []
    items = requires.items() if isinstance(requires, Mapping) else requires
    out = []
    for item in items:
        what, met = item
        if not isinstance(what, str) or not what:
            raise TypeError(f"requires: each precondition needs a description string, got {what!r}")
        if hasattr(met, "item"):
            met = met.item()
        if not isinstance(met, bool):
            raise TypeError(f"requires[{what!r}] must be a bool (was it met?), got {type(met).__name__}")
        out.append({"what": what, "met": met})
    return out


def _values_of(x, name: str):
    """Per-seed values from a sequence or an Estimate that kept its samples."""
    if isinstance(x, Estimate):
        if x.samples is None or x.method in ("clopper-pearson", "wilson"):
            raise ValueError(f"{name}: a paired comparison needs per-seed values (an Estimate without samples)")
        return list(x.samples)
    if isinstance(x, (str, bytes, Mapping)) or not isinstance(x, Sequence) and not hasattr(x, "__array__"):
        raise TypeError(f"{name}: a paired comparison needs a sequence of per-seed values, got {type(x).__name__}")
    return list(x)


def _summary(x, name: str, *, bounds, scale) -> Estimate:
    """An Estimate from an Estimate or a number as they are, or from per-seed values (a sequence)."""
    if isinstance(x, (Estimate, Mapping, str, bytes, bool, int, float)):
        return as_estimate(x, name)
    if getattr(x, "ndim", None) == 0:
        return as_estimate(x, name)
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__"):
        return estimate(x, bounds=bounds, scale=scale)
    return as_estimate(x, name)


@dataclass
class Claim:
    """One headline claim of a paper (or one check), measured, with its computed verdict.

    Build it with :meth:`threshold`, :meth:`compare`, :meth:`compare_all`, :meth:`within` or
    :meth:`check`; values are :class:`~paperworks.stats.Estimate` s, bare numbers (no interval)
    or sequences of per-seed values (summarised with a t-interval, clipped to ``bounds``).

    Common keyword arguments:
        exact: the values are exact (identities, closed-form counts): compare them without
            intervals. Otherwise a value without an interval gives ``inconclusive``.
        requires: preconditions ``{"every model reached recall ≥ 0.99": bool, ...}``; one that
            is false makes the verdict ``inconclusive`` and says why.
        bounds: the metric's range, for sequences (e.g. ``(0, 1)``).
        notes: free text shown beside the claim.
    """

    id: str
    statement: str
    metric: str
    method: Estimate
    verdict: str
    rule: dict
    baselines: dict[str, Estimate] = field(default_factory=dict)
    notes: str = ""
    differences: dict[str, Estimate] = field(default_factory=dict)
    reason: str = ""
    kind: str = "claim"

    # construction -----------------------------------------------------------------------

    @classmethod
    def _build(cls, id, statement, metric, method, rule, baselines=None, differences=None, notes="",
               requires=None, kind="claim") -> Claim:
        for name, v in (("id", id), ("statement", statement), ("metric", metric), ("notes", notes)):
            if not isinstance(v, str):
                raise TypeError(f"{name} must be a string, got {type(v).__name__}")
        if not re.match(r"^[A-Za-z0-9_.:-]+$", id):
            raise ValueError(f"claim id must be letters, digits and _.:- only, got {id!r}")
        rule = {**rule, "requires": _requires(requires)}
        if not rule["requires"]:
            del rule["requires"]
        c = cls(id, statement, metric, method, "inconclusive", rule, dict(baselines or {}), notes,
                dict(differences or {}), "", kind)
        c.verdict, c.reason = _rules.evaluate(c.to_dict())
        c.rule["words"] = describe(c.rule)
        return c

    @classmethod
    def threshold(cls, id: str, statement: str, metric: str, value, *, threshold: float, better: str,
                  baselines: Mapping[str, Any] | None = None, exact: bool = False, requires=None,
                  bounds=None, notes: str = "") -> Claim:
        """The value is above (``better="higher"``) or below ``threshold``."""
        check_better(better)
        thr = _rules._finite_number(threshold, "threshold")
        est = _summary(value, "value", bounds=bounds, scale="linear")
        bases = {k: as_estimate(v, f"baselines[{k!r}]") for k, v in (baselines or {}).items()}
        rule = {"kind": "threshold", "threshold": thr, "better": better, "exact": bool(exact)}
        return cls._build(id, statement, metric, est, rule, bases, None, notes, requires)

    @classmethod
    def within(cls, id: str, statement: str, metric: str, value, *, target: float, tol: float,
               baselines: Mapping[str, Any] | None = None, exact: bool = False, requires=None,
               bounds=None, notes: str = "") -> Claim:
        """Two-sided: the value equals ``target`` within ``tol`` ("the rate is 2/3")."""
        t = _rules._finite_number(target, "target")
        tol = _rules._finite_number(tol, "tol")
        if tol < 0:
            raise ValueError(f"tol must be >= 0, got {tol}")
        est = _summary(value, "value", bounds=bounds, scale="linear")
        bases = {k: as_estimate(v, f"baselines[{k!r}]") for k, v in (baselines or {}).items()}
        rule = {"kind": "within", "target": t, "tol": tol, "exact": bool(exact)}
        return cls._build(id, statement, metric, est, rule, bases, None, notes, requires)

    @classmethod
    def compare(cls, id: str, statement: str, metric: str, value, *, baseline: str,
                baselines: Mapping[str, Any], better: str, margin: float = 0.0, paired: bool = False,
                scale: str = "linear", exact: bool = False, requires=None, bounds=None, notes: str = "") -> Claim:
        """The method beats ``baseline`` (one of ``baselines``) by more than ``margin``.

        ``paired=True``: ``value`` and ``baselines[baseline]`` are per-seed values on the same seeds
        (sequences, or Estimates that kept ``samples``); the verdict uses the interval of the
        per-seed differences (``scale="log"``: of the ratios; the margin is then a log ratio).
        A negative ``margin`` makes it a non-inferiority claim.
        """
        if not isinstance(baselines, Mapping) or baseline not in baselines:
            raise ValueError(f"baseline {baseline!r} is not among baselines {sorted(baselines or {})}")
        return cls._compare(id, statement, metric, value, [baseline], baselines, better, margin, paired,
                            scale, exact, requires, bounds, notes, "compare")

    @classmethod
    def compare_all(cls, id: str, statement: str, metric: str, value, *, baselines: Mapping[str, Any],
                    better: str, margin: float = 0.0, paired: bool = False, scale: str = "linear",
                    exact: bool = False, requires=None, bounds=None, notes: str = "") -> Claim:
        """The method beats *every* baseline in ``baselines`` ("beats A and B")."""
        if not isinstance(baselines, Mapping) or not baselines:
            raise ValueError("compare_all needs at least one baseline")
        return cls._compare(id, statement, metric, value, list(baselines), baselines, better, margin, paired,
                            scale, exact, requires, bounds, notes, "compare_all")

    @classmethod
    def _compare(cls, id, statement, metric, value, names, baselines, better, margin, paired, scale, exact,
                 requires, bounds, notes, kind) -> Claim:
        check_better(better)
        margin = _rules._finite_number(margin, "margin")
        if scale not in ("linear", "log"):
            raise ValueError(f"scale must be 'linear' or 'log', got {scale!r}")
        if not isinstance(paired, bool):
            raise TypeError(f"paired must be a bool, got {type(paired).__name__}")
        diffs = {}
        if paired:
            mv = _values_of(value, "value")
            est = estimate(mv, bounds=bounds, scale=scale)
            bases = {}
            for k, v in baselines.items():
                if k in names:
                    bv = _values_of(v, f"baselines[{k!r}]")
                    bases[k] = estimate(bv, bounds=bounds, scale=scale)
                    diffs[k] = paired_difference(mv, bv, scale=scale)
                else:
                    bases[k] = _summary(v, f"baselines[{k!r}]", bounds=bounds, scale=scale)
        else:
            est = _summary(value, "value", bounds=bounds, scale=scale)
            bases = {k: _summary(v, f"baselines[{k!r}]", bounds=bounds, scale=scale) for k, v in baselines.items()}
        rule = {"kind": kind, "better": better, "margin": margin, "paired": paired, "scale": scale,
                "exact": bool(exact)}
        if kind == "compare":
            rule["baseline"] = names[0]
        else:
            rule["baselines"] = list(names)
        return cls._build(id, statement, metric, est, rule, bases, diffs, notes, requires)

    @classmethod
    def check(cls, id: str, statement: str, metric: str, value, *, threshold: float | None = None,
              better: str | None = None, target: float | None = None, tol: float | None = None,
              exact: bool = True, notes: str = "") -> Claim:
        """An identity or sanity property (holds by construction): stored apart from the claims.

        Either ``threshold`` and ``better`` (e.g. a residual ≤ 1e-8) or ``target`` and ``tol``.
        Exact by default: the value is compared as it is.
        """
        if target is not None:
            c = cls.within(id, statement, metric, value, target=target, tol=tol if tol is not None else 0.0,
                           exact=exact, notes=notes)
        elif threshold is not None and better is not None:
            c = cls.threshold(id, statement, metric, value, threshold=threshold, better=better, exact=exact,
                              notes=notes)
        else:
            raise ValueError("Claim.check needs threshold= and better=, or target= (and tol=)")
        c.kind = "check"
        return c

    def to_dict(self) -> dict:
        d = {
            "id": self.id,
            "statement": self.statement,
            "metric": self.metric,
            "method": self.method.to_dict(),
            "baselines": {k: v.to_dict() for k, v in self.baselines.items()},
            "rule": dict(self.rule),
            "verdict": self.verdict,
            "reason": self.reason,
            "notes": self.notes,
        }
        if self.differences:
            d["differences"] = {k: v.to_dict() for k, v in self.differences.items()}
        return d


def recompute_verdict(claim: Mapping) -> str:
    """The verdict implied by a stored claim's numbers and rule."""
    return _rules.evaluate(claim)[0]


# writing ---------------------------------------------------------------------------------

def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def atomic_torch_save(obj, path) -> Path:
    """``torch.save(obj)`` to a temporary file beside ``path``, then ``os.replace``: never a half-written file.

    The parent folder is created. torch is imported only here.
    """
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
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
    untracked changes under ``path`` (the package) or the common package's source and pyproject
    (``shared/src``, without ``paperworks/lm`` unless the run imported it); other packages' edits,
    shared's tests and docs do not count. ``PAPERWORKS_GIT_COMMIT`` overrides (installs outside a checkout).
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
        scopes = [str(where)]
        if (top / "shared").is_dir():
            # the common package's runtime code; its tests and docs do not change a run, and the
            # optional paperworks.lm only counts for runs that imported it
            scopes += [str(top / "shared" / "src"), str(top / "shared" / "pyproject.toml")]
            if "paperworks.lm" not in sys.modules:
                scopes.append(f":(exclude){top / 'shared' / 'src' / 'paperworks' / 'lm'}")
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
                  commit: str | None = None, checks: Iterable[Claim] = ()) -> dict:
    """Write ``results.json`` (and ``metrics.csv``) into ``out_dir``; return the document.

    ``claims`` may hold checks too (built with :meth:`Claim.check`): they are stored under ``checks``.

    ``source``: a path inside the package's checkout, used to find the git commit. ``commit``: the
    commit the run started from (see :func:`git_commit`); taken now from ``source`` when omitted.
    """
    out_dir = Path(out_dir)
    claims, checks = list(claims), list(checks)
    for c in [*claims, *checks]:
        if not isinstance(c, Claim):
            raise TypeError(f"claims must be Claim objects (Claim.threshold/compare/...), got {type(c).__name__}")
    if not isinstance(experiment, str) or not EXPERIMENT_NAME.match(experiment):
        raise ValueError(f"experiment name must be letters, digits and _.- (e.g. 'mydata'), got {experiment!r}")
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
        "claims": [c.to_dict() for c in claims if c.kind == "claim"],
        "checks": [c.to_dict() for c in [*claims, *checks] if c.kind == "check"],
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

def _schema_errors(doc: Mapping) -> list[str]:
    from jsonschema import Draft202012Validator

    errs = sorted(Draft202012Validator(SCHEMA).iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errs[:5]]


def validate_results(doc: Mapping) -> None:
    """Raise ``ValueError`` unless ``doc`` follows the schema and every verdict matches its numbers.

    Enforced: the JSON Schema :data:`SCHEMA` (types, required keys), a known ``schema_version``,
    ``lower <= value <= upper`` in every estimate, unique claim and check ids, at least one claim
    or check, and each stored verdict equal to the one its rule computes from its numbers.
    """
    if not isinstance(doc, Mapping):
        raise ValueError(f"results must be a JSON object, got {type(doc).__name__}")
    missing = [k for k in SCHEMA["required"] if k not in doc]
    if missing:
        raise ValueError(f"results.json lacks {missing}")
    if doc.get("schema_version") not in SCHEMA_VERSIONS:
        raise ValueError(f"schema_version {doc.get('schema_version')!r} is not known (known: {SCHEMA_VERSIONS}); "
                         "files from paperworks 0.1 must be re-run")
    errs = _schema_errors(doc)
    if errs:
        raise ValueError("results.json does not follow the schema: " + "; ".join(errs))
    items = [*doc["claims"], *doc["checks"]]
    if not items:
        raise ValueError("results.json must carry at least one claim or check")
    ids = [c["id"] for c in items]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"claim/check ids must be unique; repeated: {dup}")
    for c in items:
        for where, e in [("method", c["method"]), *((f"baselines/{k}", v) for k, v in c["baselines"].items()),
                         *((f"differences/{k}", v) for k, v in (c.get("differences") or {}).items())]:
            try:
                Estimate.from_dict(e)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"claim {c['id']!r} {where}: {exc}") from None
        got, _ = _rules.evaluate(c)
        if got != c["verdict"]:
            raise ValueError(f"claim {c['id']!r}: stored verdict {c['verdict']!r} but its numbers give {got!r}")


def load_results(path) -> dict:
    """Read and validate a ``results.json`` (a file or a run directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    validate_results(doc)
    return doc
