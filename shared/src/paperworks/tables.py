"""Results tables for READMEs, generated from a package's results of record.

A package commits its last ``paper`` and ``bench`` runs' ``results.json`` as
``packages/<slug>/results/{paper,bench}.json``. Its README holds, for each, a block between
markers that ``python -m paperworks tables packages/<slug>`` rewrites::

    <!-- paperworks:results paper -->
    ... generated: run header, claims table (value, CI, rule, verdict), checks table ...
    <!-- paperworks:end -->

A package may also generate its own tables from the same records (per-arm results, sweeps): a block
``<!-- paperworks:table NAME -->`` ... ``<!-- paperworks:end -->`` is filled by the function
``readme_tables(records) -> {NAME: markdown}`` of the module ``<slug>.readme_tables``, where
``records`` maps ``"paper"``/``"bench"``/``"bench_cuda"`` to the committed results documents and, where
``record`` kept the run's ``metrics.csv`` as ``results/<name>_metrics.csv``, ``"<name>_metrics"`` to its
rows (dicts of strings).

``--check`` only reports a difference (exit 1): the repo tests use it, so a README table never
drifts from the numbers it claims to show.
"""

from __future__ import annotations

import csv
import importlib
import json
import re
import shutil
from pathlib import Path

from paperworks.results import atomic_write_text, validate_results

# results of record: the CPU paper and bench runs, and a bench run on a GPU where a package has one
RECORDS = ("paper", "bench", "bench_cuda")
METRICS_MAX_BYTES = 2_000_000  # `record` keeps a run's metrics.csv beside its JSON up to this size
START = "<!-- paperworks:results {name} -->"
END = "<!-- paperworks:end -->"
_BLOCK = re.compile(r"<!-- paperworks:results (\w+) -->\n.*?<!-- paperworks:end -->", re.S)
_TABLE = re.compile(r"<!-- paperworks:table (\w+) -->\n.*?<!-- paperworks:end -->", re.S)


def _fmt(x) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return "∞" if x == "inf" else ("−∞" if x == "-inf" else x)
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e4 or a < 1e-3:
        return f"{x:.3g}"
    return f"{x:.4g}"


def fmt_estimate(e: dict | None) -> str:
    """``0.123 [0.101, 0.145]`` (the bare value without a CI; ``n/a`` when undefined)."""
    if not e:
        return "n/a"
    v = "n/a" if e.get("value") is None else _fmt(e["value"])
    s = v if e.get("lower") is None or e.get("upper") is None else f"{v} [{_fmt(e['lower'])}, {_fmt(e['upper'])}]"
    if e.get("n_censored"):
        s += f" ({e['n_censored']}/{e['n']} missed)"
    return s


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def claim_rows(items: list[dict]) -> list[dict]:
    rows = []
    for c in items:
        bases = "; ".join(f"{k}: {fmt_estimate(v)}" for k, v in c.get("baselines", {}).items())
        diffs = "; ".join(f"vs {k}: {fmt_estimate(v)}" for k, v in (c.get("differences") or {}).items())
        rows.append({"claim": c["id"], "statement": c["statement"], "metric": c["metric"],
                     "method": fmt_estimate(c["method"]), "baselines": bases or "—", "paired": diffs,
                     "rule": c["rule"].get("words", c["rule"].get("kind", "")), "verdict": c["verdict"],
                     "reason": c.get("reason", "")})
    return rows


def run_header(doc: dict) -> str:
    m = doc.get("machine", {})
    secs = doc.get("timings", {}).get("total_s")
    wall = "n/a" if secs is None else (f"{secs:.0f} s" if secs >= 10 else f"{secs:.1f} s")
    return (f"`{doc['package']} experiment={doc['experiment']}` · version {doc['version']} · commit "
            f"`{str(doc['git_commit'])[:12]}` · {len(doc['seeds'])} seed(s) · wall time {wall} · "
            f"{m.get('cores', '?')} cores, {m.get('device', 'cpu')}, Python {m.get('python', '?')}")


def markdown_table(doc: dict) -> str:
    """The claims (and, apart, the checks) of one results document as Markdown."""
    out = ["| claim | statement | method | baselines | rule | verdict |", "|---|---|---|---|---|---|"]
    for r in claim_rows(doc["claims"]):
        method = r["method"] + (f" (paired: {r['paired']})" if r["paired"] else "")
        cells = [f"`{r['claim']}`", r["statement"], f"{r['metric']}: {method}", r["baselines"], r["rule"],
                 f"**{r['verdict']}**"]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if doc.get("checks"):
        out += ["", "Checks (identities and sanity properties; they hold by construction and are not claims):", "",
                "| check | statement | value | rule | result |", "|---|---|---|---|---|"]
        for r in claim_rows(doc["checks"]):
            res = {"supported": "pass", "not supported": "FAIL"}.get(r["verdict"], r["verdict"])
            cells = [f"`{r['claim']}`", r["statement"], f"{r['metric']}: {r['method']}", r["rule"], res]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(out)


def counts(doc: dict) -> dict[str, int]:
    c = {"supported": 0, "not supported": 0, "inconclusive": 0}
    for claim in doc["claims"]:
        c[claim["verdict"]] += 1
    return c


def block(name: str, doc: dict) -> str:
    n = counts(doc)
    summary = (f"{n['supported']} supported, {n['not supported']} not supported, {n['inconclusive']} inconclusive; "
               f"{len(doc.get('checks', []))} check(s)")
    body = [START.format(name=name), "", f"{run_header(doc)}", "", f"Claims: {summary}.", "", markdown_table(doc), "",
            f"_Generated by `python -m paperworks tables` from `results/{name}.json`; do not edit by hand._", "", END]
    return "\n".join(body)


def load_record(path: Path) -> dict:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        validate_results(doc)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return doc


def render(pkg_dir: Path) -> tuple[str, str]:
    """(current README text, README text with every results block regenerated)."""
    pkg_dir = Path(pkg_dir)
    readme = pkg_dir / "README.md"
    if not readme.exists():
        raise FileNotFoundError(f"{readme} does not exist")
    text = readme.read_text(encoding="utf-8")

    def sub(m):
        name = m.group(1)
        rec = pkg_dir / "results" / f"{name}.json"
        if not rec.exists():
            raise FileNotFoundError(f"{readme} has a results block for {name!r} but {rec} does not exist")
        return block(name, load_record(rec))

    new = _BLOCK.sub(sub, text)
    names = _TABLE.findall(new)
    if names:
        tables = package_tables(pkg_dir)
        missing = sorted(set(names) - set(tables))
        if missing:
            raise KeyError(f"{readme}: no generated table {missing} ({pkg_dir.name}.readme_tables gives {sorted(tables)})")

        def table(m):
            name = m.group(1)
            return "\n".join([f"<!-- paperworks:table {name} -->", "", tables[name].strip(), "",
                              f"_Generated by `python -m paperworks tables` ({pkg_dir.name}.readme_tables) from "
                              "`results/`; do not edit by hand._", "", END])

        new = _TABLE.sub(table, new)
    return text, new


def package_tables(pkg_dir: Path) -> dict[str, str]:
    """The package's own tables: ``<slug>.readme_tables.readme_tables(records)`` over its results of record."""
    pkg_dir = Path(pkg_dir)
    records = {name: load_record(pkg_dir / "results" / f"{name}.json") for name in RECORDS
               if (pkg_dir / "results" / f"{name}.json").exists()}
    for name in list(records):  # a record's metrics.csv, where `record` kept it: rows as dicts of strings
        rows = pkg_dir / "results" / f"{name}_metrics.csv"
        if rows.exists():
            with rows.open(newline="", encoding="utf-8") as fh:
                records[f"{name}_metrics"] = list(csv.DictReader(fh))
    try:
        module = importlib.import_module(f"{pkg_dir.name}.readme_tables")
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"{pkg_dir / 'README.md'} has a paperworks:table block, but {pkg_dir.name}.readme_tables "
                                  f"cannot be imported ({e}); is the package installed?") from None
    tables = module.readme_tables(records)
    if not isinstance(tables, dict) or not all(isinstance(v, str) for v in tables.values()):
        raise TypeError(f"{pkg_dir.name}.readme_tables.readme_tables must return a dict of markdown strings")
    return tables


def update(pkg_dir: Path, *, check: bool = False) -> bool:
    """Regenerate (or with ``check``, compare) the README blocks; True when the README is current."""
    old, new = render(pkg_dir)
    if old == new:
        return True
    if not check:
        atomic_write_text(Path(pkg_dir) / "README.md", new)
    return False


def record(run_dir: Path, pkg_dir: Path) -> Path:
    """Copy a run's ``results.json`` into ``pkg_dir/results/<experiment>.json`` (a result of record)."""
    src = Path(run_dir)
    src = src / "results.json" if src.is_dir() else src
    doc = load_record(src)
    if doc["experiment"] not in RECORDS:
        raise ValueError(f"only {RECORDS} runs are results of record, got experiment {doc['experiment']!r}")
    dest = Path(pkg_dir) / "results" / f"{doc['experiment']}.json"
    atomic_write_text(dest, json.dumps(doc, indent=2, allow_nan=False) + "\n")
    rows, kept = src.parent / "metrics.csv", dest.with_name(f"{doc['experiment']}_metrics.csv")
    if rows.is_file() and rows.stat().st_size <= METRICS_MAX_BYTES:  # the per-seed rows behind the claims
        shutil.copyfile(rows, kept)
    else:
        kept.unlink(missing_ok=True)  # never leave an older run's rows beside this record
    return dest
