"""Pool a Hydra multirun (``-m seed=0,1,2``) into one ``results.json`` with intervals over all seeds.

Each job of the sweep ran a disjoint block of seeds (see :func:`paperworks.seeding.seeds_of`)
and kept its per-seed values in ``Estimate.samples``. Pooling concatenates those samples,
recomputes every estimate with the estimator that made it (same bounds, level, scale) and
recomputes every verdict with the same rule. A claim whose estimates cannot be pooled (a
single deterministic value, a median from a bootstrap without samples) is dropped and listed
under ``extra.not_pooled``; preconditions (``requires``) must hold in every job.

    python -m paperworks aggregate multirun/mkscp/2026-12-01_10-00-00 [--out DIR]
"""

from __future__ import annotations

import json
from pathlib import Path

from paperworks import rules as _rules
from paperworks.results import Claim, atomic_write_text, load_results, validate_results
from paperworks.stats import POOLABLE, Estimate, resummarise


def _pool(ests: list[Estimate]) -> Estimate:
    first = ests[0]
    if any(e.method != first.method or e.bounds != first.bounds for e in ests):
        raise ValueError("estimates made by different estimators cannot be pooled")
    if first.method not in POOLABLE or any(e.samples is None for e in ests):
        raise ValueError(f"an estimate made by {first.method!r} without samples cannot be pooled")
    if first.method in ("clopper-pearson", "wilson"):
        s = sum(e.samples[0] for e in ests)
        t = sum(e.samples[1] for e in ests)
        return resummarise(first, (s, t))
    return resummarise(first, [v for e in ests for v in e.samples])


def _pool_claim(items: list[dict]) -> dict:
    first = items[0]
    for c in items[1:]:
        for k in ("rule",):
            a = {kk: vv for kk, vv in c[k].items() if kk != "requires"}
            b = {kk: vv for kk, vv in first[k].items() if kk != "requires"}
            if a != b:
                raise ValueError(f"claim {first['id']!r}: the rule differs between jobs")
    method = _pool([Estimate.from_dict(c["method"]) for c in items])
    baselines = {k: _pool([Estimate.from_dict(c["baselines"][k]) for c in items]) for k in first["baselines"]}
    diffs = {k: _pool([Estimate.from_dict(c["differences"][k]) for c in items])
             for k in (first.get("differences") or {})}
    rule = dict(first["rule"])
    reqs = {}
    for c in items:
        for r in c["rule"].get("requires", []):
            reqs[r["what"]] = reqs.get(r["what"], True) and r["met"]
    if reqs:
        rule["requires"] = [{"what": w, "met": m} for w, m in reqs.items()]
    claim = Claim(first["id"], first["statement"], first["metric"], method, "inconclusive", rule, baselines,
                  first.get("notes", ""), diffs)
    d = claim.to_dict()
    d["verdict"], d["reason"] = _rules.evaluate(d)
    return d


def aggregate(sweep_dir: Path, out_dir: Path | None = None) -> dict:
    """Pool every ``results.json`` under ``sweep_dir``; write ``<out_dir>/results.json``; return it."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise FileNotFoundError(f"{sweep_dir} is not a directory")
    out_dir = Path(out_dir) if out_dir is not None else sweep_dir / "aggregate"
    files = sorted(p for p in sweep_dir.rglob("results.json") if out_dir not in p.parents)
    if len(files) < 1:
        raise ValueError(f"no results.json under {sweep_dir}")
    docs = [load_results(f) for f in files]
    pkg, exp = docs[0]["package"], docs[0]["experiment"]
    for f, d in zip(files, docs):
        if (d["package"], d["experiment"]) != (pkg, exp):
            raise ValueError(f"{f}: {d['package']} {d['experiment']} differs from {pkg} {exp}; aggregate one sweep")
    seen: dict[int, Path] = {}
    for f, d in zip(files, docs):
        for s in d["seeds"]:
            if s in seen:
                raise ValueError(f"seed {s} appears in both {seen[s]} and {f}: the jobs' seed sets overlap "
                                 "(sweep seed=0,1,... with seeds=N for disjoint blocks)")
            seen[s] = f
    pooled, dropped = {"claims": [], "checks": []}, []
    for part in ("claims", "checks"):
        ids = [c["id"] for c in docs[0][part]]
        for cid in ids:
            items = [next((c for c in d[part] if c["id"] == cid), None) for d in docs]
            if any(i is None for i in items):
                dropped.append(f"{cid}: not in every job")
                continue
            try:
                pooled[part].append(_pool_claim(items))
            except ValueError as e:
                dropped.append(f"{cid}: {e}")
    if not pooled["claims"] and not pooled["checks"]:
        raise ValueError(f"nothing could be pooled: {dropped}")
    doc = dict(docs[0])
    doc.update({
        "seeds": sorted(seen),
        "claims": pooled["claims"],
        "checks": pooled["checks"],
        "timings": {"total_s": sum(d["timings"].get("total_s") or 0.0 for d in docs)},
        "git_commit": ",".join(sorted({d["git_commit"] for d in docs})),
        "extra": {"aggregated_from": [str(f.relative_to(sweep_dir)) for f in files], "jobs": len(files),
                  "not_pooled": dropped},
    })
    validate_results(doc)
    atomic_write_text(out_dir / "results.json", json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return doc
