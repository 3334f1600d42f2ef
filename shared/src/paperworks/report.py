"""The report builder: ``results.json`` files → one self-contained HTML page and a Markdown summary.

Everything in the report comes from the results files (and the PNGs beside them); nothing is typed.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from paperworks.results import atomic_write_text, load_results


def fmt_estimate(e: dict | None) -> str:
    """``0.123 [0.101, 0.145]`` (or the bare value without a CI)."""
    if not e or e.get("value") is None:
        return "n/a"
    v = _fmt(e["value"])
    if e.get("lower") is None or e.get("upper") is None:
        return v
    return f"{v} [{_fmt(e['lower'])}, {_fmt(e['upper'])}]"


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e4 or a < 1e-3:
        return f"{x:.3g}"
    return f"{x:.4g}"


def claims_rows(doc: dict) -> list[dict]:
    rows = []
    for c in doc["claims"]:
        bases = "; ".join(f"{k}: {fmt_estimate(v)}" for k, v in c.get("baselines", {}).items())
        rows.append({"claim": c["id"], "statement": c["statement"], "metric": c["metric"],
                     "method": fmt_estimate(c["method"]), "baselines": bases or "—", "verdict": c["verdict"]})
    return rows


def markdown_table(doc: dict) -> str:
    """The claims of one results document as a Markdown table."""
    out = ["| claim | metric | method | baselines | verdict |", "|---|---|---|---|---|"]
    for r in claims_rows(doc):
        cells = [r["claim"], r["metric"], r["method"], r["baselines"], f"**{r['verdict']}**"]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def find_results(root: Path) -> list[Path]:
    return sorted(Path(root).rglob("results.json"))


def _header(doc: dict) -> str:
    return (f"{doc['package']} {doc['version']} · experiment `{doc['experiment']}` · commit "
            f"`{doc['git_commit'][:12]}` · seeds {len(doc['seeds'])} · {doc['timings'].get('total_s', 0):.1f} s · "
            f"{doc['machine'].get('cores')} cores, {doc['machine'].get('device')}")


def build_report(runs_root, out_dir) -> tuple[Path, Path]:
    """Write ``out_dir/index.html`` and ``out_dir/summary.md`` from every results.json under ``runs_root``."""
    runs_root, out_dir = Path(runs_root), Path(out_dir)
    files = find_results(runs_root)
    docs = []
    for f in files:
        docs.append((f, load_results(f)))
    docs.sort(key=lambda t: (t[1]["package"], t[1]["experiment"]))

    md = ["# paperworks report", "", f"{len(docs)} run(s). Built from the results.json files; nothing typed.", ""]
    body = []
    counts = {"supported": 0, "not supported": 0, "inconclusive": 0}
    for f, doc in docs:
        for c in doc["claims"]:
            counts[c["verdict"]] += 1
        md += [f"## {doc['package']} — {doc['experiment']}", "", _header(doc), "", markdown_table(doc), ""]
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(r[k])}</td>" for k in ("claim", "statement", "metric", "method", "baselines"))
            + f"<td class='v {r['verdict'].replace(' ', '-')}'>{html.escape(r['verdict'])}</td></tr>"
            for r in claims_rows(doc)
        )
        imgs = "".join(
            f"<figure><img alt='{html.escape(p.name)}' src='data:image/png;base64,"
            f"{base64.b64encode(p.read_bytes()).decode()}'><figcaption>{html.escape(p.name)}</figcaption></figure>"
            for p in sorted(f.parent.glob("*.png"))
        )
        body.append(
            f"<section><h2>{html.escape(doc['package'])} — {html.escape(doc['experiment'])}</h2>"
            f"<p class='meta'>{html.escape(_header(doc))}</p>"
            "<table><tr><th>claim</th><th>statement</th><th>metric</th><th>method</th><th>baselines</th>"
            f"<th>verdict</th></tr>{rows}</table><div class='plots'>{imgs}</div></section>"
        )
    totals = ", ".join(f"{v} {k}" for k, v in counts.items())
    md.insert(3, f"Claims: {totals}.")
    md.insert(4, "")
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>paperworks report</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}
table{{border-collapse:collapse;width:100%;font-size:13px}}td,th{{border:1px solid #ddd;padding:4px 6px;vertical-align:top}}
th{{background:#f4f4f4}}.v{{font-weight:600}}.supported{{color:#1a7f37}}.not-supported{{color:#b42318}}
.inconclusive{{color:#9a6700}}.meta{{color:#555;font-size:12px}}figure{{display:inline-block;margin:6px}}
img{{max-width:480px}}figcaption{{font-size:11px;color:#555}}</style></head><body>
<h1>paperworks report</h1><p>{len(docs)} run(s). Claims: {html.escape(totals)}.
Built from the results.json files; nothing typed.</p>{''.join(body) or '<p>No results found.</p>'}</body></html>
"""
    out_dir.mkdir(parents=True, exist_ok=True)
    index = atomic_write_text(out_dir / "index.html", page)
    summary = atomic_write_text(out_dir / "summary.md", "\n".join(md) + "\n")
    return index, summary
