"""The README's detail tables, generated from the results of record (``python -m mkscp.report``).

``python -m paperworks tables`` renders the claims; this renders what ``extra`` holds (the ratio table,
the side studies, the bench rows) between ``<!-- mkscp:extra paper -->`` / ``<!-- mkscp:extra bench -->``
and ``<!-- mkscp:end -->``, so no number in the README is typed by hand.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path


def _g(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float) and math.isinf(v):
        return "∞"
    return f"{v:.{digits}g}"


def _ci(e: dict) -> str:
    return f"{_g(e['value'], 4)} [{_g(e.get('lower'), 4)}, {_g(e.get('upper'), 4)}]"


def paper_extras(doc: dict) -> str:
    x = doc["extra"]
    table = x["ratio_table"]
    cfg = doc["config"]
    scores = [s for s in cfg["scores"] if s != "mahalanobis" and any(r["score"] == s for r in table)]
    a = 0.1 if any(r["alpha"] == 0.1 for r in table) else table[0]["alpha"]
    out = [f"Volume ratio vs the Mahalanobis ellipsoid at α = {a:g} (geometric mean over {len(doc['seeds'])} seeds; "
           "coverage and worst-slab coverage of MKS in brackets; `extra.ratio_table`):", "",
           "| residuals | d | " + " | ".join(scores) + " |", "|---|---|" + "---|" * len(scores)]
    cells = {(r["residuals"], r["d"], r["score"]): r for r in table if r["alpha"] == a}
    for res in [k for k in cfg["residuals"] if any(r["residuals"] == k for r in table)]:
        for d in sorted({r["d"] for r in table if r["residuals"] == res}):
            vals = []
            for s in scores:
                r = cells[(res, d, s)]
                vals.append(f"{_g(r['ratio'])} ({r['coverage']:.3f}/{r['wsc']:.3f})" if s == "mks" else _g(r["ratio"]))
            out.append(f"| {res} | {d} | " + " | ".join(vals) + " |")
    sp = x["split_vs_same_set"]
    out += ["", f"Split trap ({sp['reps']} repetitions, n = {sp['n']}, α = {sp['alpha']:g}, banana d = 2): coverage "
            f"with the score fitted on a separate split {_ci(sp['split'])}; fitted on the calibration set itself (the "
            f"official code) {_ci(sp['same_set'])}."]
    m = x.get("macrodata") or {}
    if m:
        out += ["", f"Macrodata demo ({m['n']} quarters, {m['seeds']} random splits, α = {m['alpha']:g}): coverage MKS "
                f"{_g(m['coverage_mks']['value'])}, Mahalanobis {_g(m['coverage_mahalanobis']['value'])}; volume ratio "
                f"MKS/Mahalanobis {_g(m['geomean_ratio'])}; unbounded regions: {m['unbounded']}."]
    out += ["", "Volume estimators on one MKS region (banana, α = 0.1; volume ± standard error, points drawn; the "
            "reference is uniform sampling: the box for d ≤ 3, the grown ellipsoid at d = 4):", "",
            "| d | sampler | volume | rel. se | points | stable | z vs reference |", "|---|---|---|---|---|---|---|"]
    for r in x["volume_cross_check"]:
        for meth in r["methods"]:
            e = r[meth]
            z = "reference" if meth == r["reference"] else f"{r['z'][meth]:+.2f}"
            out.append(f"| {r['d']} | {meth} | {_g(e['volume'], 4)} ± {_g(e['se'], 2)} | {_g(e['rel_se'], 2)} | "
                       f"{e['n_points']:,} | {e['stable']} | {z} |")
    s = x.get("volume_spread")
    if s:
        out += ["", f"Spread across {s['seeds']} random states at d = {s['d']} (MKS, banana, n_fit {s['n_fit']}, "
                "α = 0.1; CV = standard deviation / mean):", "",
                "| estimator | CV | (max − min) / mean | mean rel. se | stable | points (mean) |", "|---|---|---|---|---|---|"]
        for label, name in (("auto", "`region_volume(method='auto')` (adaptive), rtol 0.02"),
                            ("ellipsoid_100k", "uniform in the data's ellipsoid, 100k points (the 0.1 default)")):
            e = s[label]
            out.append(f"| {name} | {_g(e['cv'])} | {_g(e['range_over_mean'])} | {_g(e['rel_se_mean'])} | "
                       f"{e['stable']}/{s['seeds']} | {e['n_points_mean']:,.0f} |")
    out += ["", f"Monte-Carlo volumes in the grid: {x['mc_estimates']} estimates, {x['mc_unstable_estimates']} above "
            f"`mc_rtol` = {doc['config']['mc_rtol']:g} within `mc_max_points` = {doc['config']['mc_max_points']:,}; "
            f"unbounded regions: {x['unbounded_regions']}; MKS cells whose region reached the domain's shell: "
            f"{x['mc_truncated_cells']}."]
    c = x["convergence"]
    out += ["", "Convergence study (log-log slope of the score error vs n_fit, mean [95% CI]): "
            + "; ".join(f"{k} {_ci(v)}" for k, v in c.items()) + "."]
    return "\n".join(out)


def bench_extras(doc: dict) -> str:
    rows = doc["extra"]["bench_rows"]
    out = ["Fit and scoring (100k points) CPU time against n_fit, median over the interleaved repeats "
           "(`extra.bench_rows`; wall times there too):", "",
           "| variant | n_fit | fit (CPU s) | score 100k (CPU s) | rank | Spearman vs exact |", "|---|---|---|---|---|---|"]
    fit = {(r["variant"], r["n_fit"]): r for r in rows if r["what"] == "fit"}
    for r in (r for r in rows if r["what"] == "score" and r["variant"] in ("exact", "nystrom")):
        f = fit.get((r["variant"], r["n_fit"]), {})
        out.append(f"| {r['variant']} | {r['n_fit']} | {_g(f.get('cpu_median_s'))} | {_g(r['cpu_median_s'])} | "
                   f"{r.get('rank', '—')} | {_g(r.get('spearman_vs_exact'), 4)} |")
    ratios = doc["extra"].get("scoring_cpu_ratios", {})
    base = [r for r in rows if r["what"] == "score" and r["variant"] not in ("exact", "nystrom")]
    if base:
        n = base[0]["n_fit"]
        out += ["", f"| scoring 100k points, n_fit {n} | CPU s | MKS CPU / this, same rounds [95% CI] |", "|---|---|---|"]
        for r in base:
            e = ratios.get(f"mks_cpu_over_{r['variant']}")
            out.append(f"| {r['variant']} | {_g(r['cpu_median_s'])} | {_ci(e) if e else '—'} |")
    vol = [r for r in rows if r["what"] == "volume"]
    if vol:
        out += ["", "| volume of one MKS region (n_fit 1500, α = 0.1) | d | sampler | points | rel. se | stable | CPU s |",
                "|---|---|---|---|---|---|---|"]
        for r in vol:
            out.append(f"| {r['variant']} | {r['d']} | {r['sampler']} | {r['n_points']:,} | {_g(r['rel_se'], 2)} | "
                       f"{r['stable']} | {_g(r['cpu_median_s'])} |")
    return "\n".join(out)


def render(pkg: Path) -> tuple[str, str]:
    """``(old, new)`` README text with the extra blocks regenerated from ``results/``."""
    readme = Path(pkg) / "README.md"
    old = readme.read_text(encoding="utf-8")
    new = old
    for name, fn in (("paper", paper_extras), ("bench", bench_extras)):
        rec = Path(pkg) / "results" / f"{name}.json"
        if not rec.exists():
            continue
        body = fn(json.loads(rec.read_text(encoding="utf-8")))
        pat = re.compile(rf"(<!-- mkscp:extra {name} -->\n).*?(<!-- mkscp:end -->)", re.S)
        new = pat.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), new, count=1)
    return old, new


def main(argv=None) -> None:
    pkg = Path((argv or sys.argv[1:] or ["."])[0])
    old, new = render(pkg)
    if new != old:
        (pkg / "README.md").write_text(new, encoding="utf-8")
    print("README extras up to date" if new == old else "README extras regenerated")


if __name__ == "__main__":
    main()
