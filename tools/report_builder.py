"""The report builder: ``results.json`` files → one self-contained HTML page and a Markdown summary.

Inputs:

- ``runs_root``: the ``make demo`` output, ``<runs_root>/<slug>/<experiment>/results.json`` with the
  run's PNGs beside it (any ``results.json`` below ``runs_root`` is picked up);
- ``records_root`` (default ``<repo>/packages``): the results of record,
  ``<records_root>/<slug>/results/{paper,bench}.json``, and each package's ``README.md``
  (its first ``# `` line is the paper's title).

A file that is not JSON or fails :func:`paperworks.results.validate_results` is listed under
"skipped files" (on the page and in ``summary.md``); it never stops the report.

Everything shown comes from the files; nothing is typed.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from paperworks.results import atomic_write_text, validate_results
from paperworks.tables import claim_rows, counts, fmt_estimate, markdown_table, run_header

#: experiments too small to decide anything: shown with a caveat
SMALL = ("smoke", "quick")
CAVEAT = "too small to decide; the paper run is the result of record"
_ORDER = {"paper": 0, "bench": 1, "bench_cuda": 2, "quick": 3, "smoke": 4}


@dataclass
class Run:
    """One valid results document and where it came from."""

    doc: dict
    path: Path
    label: str  # the path shown on the page
    record: bool  # a result of record (packages/<slug>/results/*.json)
    plots: list[Path] = field(default_factory=list)

    @property
    def experiment(self) -> str:
        return self.doc["experiment"]

    @property
    def small(self) -> bool:
        return not self.record and self.experiment in SMALL

    @property
    def kind(self) -> str:
        if self.record:
            return "result of record"
        return "quick run (demo)" if self.experiment == "quick" else ("smoke run" if self.small else "run")

    @property
    def anchor(self) -> str:
        tag = "record" if self.record else "run"
        return f"pkg-{self.doc['package']}-{tag}-{_slugify(self.experiment)}"


@dataclass
class Skipped:
    label: str
    why: str
    slug: str | None = None


@dataclass
class Package:
    slug: str
    title: str = ""
    readme: Path | None = None
    runs: list[Run] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def ordered(self) -> list[Run]:
        return sorted(self.runs, key=lambda r: (not r.record, _ORDER.get(r.experiment, 9), r.experiment, r.label))


# ---------------------------------------------------------------------------------------------
# discovery

def _slugify(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", s).strip("-") or "x"


def find_repo_root(*paths) -> Path | None:
    """The first ancestor of ``paths`` holding ``packages/`` and ``shared/`` (the monorepo root)."""
    for p in paths:
        if p is None:
            continue
        for d in [Path(p).resolve(), *Path(p).resolve().parents]:
            if (d / "packages").is_dir() and (d / "shared").is_dir():
                return d
    return None


def paper_title(readme: Path, slug: str) -> str:
    """The README's first ``# `` line, without a leading ``<slug> — ``."""
    try:
        for line in readme.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                t = line[2:].strip()
                for sep in (" — ", " - ", ": "):
                    if t.lower().startswith(slug.lower() + sep):
                        return t[len(slug) + len(sep):].strip()
                return t
    except OSError:
        pass
    return ""


def _load(path: Path) -> tuple[dict | None, str]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        return None, f"cannot be read: {e}"
    except json.JSONDecodeError as e:
        return None, f"invalid JSON: {e}"
    try:
        validate_results(doc)
    except (ValueError, TypeError, KeyError) as e:
        return None, f"not a valid results file: {e}"
    return doc, ""


def _short(s: str, n: int = 400) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def collect(runs_root: Path, records_root: Path | None) -> tuple[dict[str, Package], list[Skipped]]:
    pkgs: dict[str, Package] = {}
    skipped: list[Skipped] = []

    def pkg(slug: str) -> Package:
        if slug not in pkgs:
            pkgs[slug] = Package(slug)
        return pkgs[slug]

    sources: list[tuple[Path, str, bool, str | None]] = []  # path, label, record, slug from the path
    if records_root is not None and records_root.is_dir():
        for d in sorted(p for p in records_root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if (d / "README.md").is_file() or (d / "pyproject.toml").is_file():
                pkg(d.name)
            res = d / "results"
            if res.is_dir():
                for f in sorted(res.glob("*.json")):
                    sources.append((f, f"{records_root.name}/{d.name}/results/{f.name}", True, d.name))
    if runs_root.is_dir():
        for f in sorted(runs_root.rglob("results.json")):
            rel = f.relative_to(runs_root)
            guess = rel.parts[0] if len(rel.parts) > 1 else None
            sources.append((f, f"{runs_root.name}/{rel.as_posix()}", False, guess))

    for path, label, record, guess in sources:
        doc, why = _load(path)
        if doc is None:
            s = Skipped(label, _short(why), guess)
            skipped.append(s)
            if guess and (guess in pkgs or not record):
                pkg(guess).skipped.append(s)
            continue
        plots = [] if record else sorted(p for p in path.parent.glob("*.png") if not p.name.startswith("."))
        pkg(doc["package"]).runs.append(Run(doc, path, label, record, plots))

    if records_root is not None:
        for slug, p in pkgs.items():
            readme = records_root / slug / "README.md"
            if readme.is_file():
                p.readme = readme
                p.title = paper_title(readme, slug)
    return dict(sorted(pkgs.items())), skipped


# ---------------------------------------------------------------------------------------------
# text helpers

_CODE = re.compile(r"`([^`\n]+)`")


def inline(s) -> str:
    """Escape ``s`` for HTML, rendering Markdown code spans (`x`) as ``<code>``."""
    s = str(s)
    out, pos = [], 0
    for m in _CODE.finditer(s):
        out.append(html.escape(s[pos:m.start()]))
        out.append(f"<code>{html.escape(m.group(1))}</code>")
        pos = m.end()
    out.append(html.escape(s[pos:]))
    return "".join(out)


def _esc(s) -> str:
    return html.escape(str(s), quote=True)


def _wall(doc: dict) -> str:
    secs = doc.get("timings", {}).get("total_s")
    if secs is None:
        return "n/a"
    if secs >= 120:
        return f"{secs / 60:.1f} min"
    return f"{secs:.0f} s" if secs >= 10 else f"{secs:.1f} s"


def check_counts(doc: dict) -> dict[str, int]:
    c = {"pass": 0, "fail": 0, "inconclusive": 0}
    for ch in doc.get("checks", []):
        c[{"supported": "pass", "not supported": "fail"}.get(ch["verdict"], "inconclusive")] += 1
    return c


def _checks_text(doc: dict) -> str:
    c = check_counts(doc)
    if not doc.get("checks"):
        return "—"
    parts = [f"{c['pass']} pass"]
    if c["fail"]:
        parts.append(f"{c['fail']} FAIL")
    if c["inconclusive"]:
        parts.append(f"{c['inconclusive']} inconclusive")
    return ", ".join(parts)


def _png_size(path: Path) -> tuple[int, int] | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
        if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
            return struct.unpack(">II", head[16:24])
    except OSError:
        pass
    return None


def _rel(target: Path, start: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(start).resolve())).as_posix()


def _exp_name(r: Run) -> str:
    return r.experiment + ("" if r.record or not r.small else "*")


# ---------------------------------------------------------------------------------------------
# HTML

CSS = """
:root{--ok:#1a7f37;--no:#b42318;--inc:#9a6700;--line:#d8dde3;--muted:#57606a;--bg:#f6f8fa}
*{box-sizing:border-box}
html{scroll-padding-top:56px}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;margin:0}
nav{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--line);
 padding:8px 24px;font-size:14px;display:flex;flex-wrap:wrap;gap:4px 14px;align-items:baseline}
nav b{margin-right:6px}nav a{color:#0550ae;text-decoration:none}nav a:hover{text-decoration:underline}
main{max-width:1440px;margin:0 auto;padding:8px 24px 60px}
h1{font-size:28px;margin:18px 0 6px}
h2{font-size:22px;margin:0 0 4px}
h3{font-size:17px;margin:22px 0 6px}
h2 .title{font-weight:400;color:var(--muted)}
.totals{font-size:16px;margin:4px 0 14px}
.lead{color:var(--muted);font-size:14px;margin:0 0 18px}
section.pkg{border-top:3px solid #1f2328;margin-top:36px;padding-top:12px}
.links{font-size:14px;color:var(--muted);margin:0 0 8px}
table{border-collapse:collapse;width:100%;font-size:14px;margin:6px 0 10px}
td,th{border:1px solid var(--line);padding:5px 8px;vertical-align:top;text-align:left}
th{background:var(--bg);font-weight:600;white-space:nowrap}
td.num{white-space:nowrap;font-variant-numeric:tabular-nums}
td.est{font-variant-numeric:tabular-nums;min-width:120px}td.est span,td.est i{white-space:nowrap;font-style:normal}
td.stmt{min-width:220px}td.rule{min-width:140px;max-width:260px}td.v{min-width:150px;max-width:280px}
.tw{overflow-x:auto;max-width:100%}
.zero{color:#8c959f!important;font-weight:400}
td.nw{white-space:nowrap}
table.overview td{white-space:nowrap}table.overview td.t{white-space:normal;min-width:260px}
table.checks{font-size:13px;width:auto;max-width:100%}
.v{font-weight:700;white-space:nowrap}
.supported,.pass{color:var(--ok)}.not-supported,.fail{color:var(--no)}.inconclusive{color:var(--inc)}
.reason{display:block;font-weight:400;font-size:12.5px;color:var(--muted);white-space:normal;min-width:150px}
.rule{font-size:13px}table.claims td:first-child{white-space:nowrap}
.note{display:block;font-size:12.5px;color:var(--muted);margin-top:3px}
.meta{color:var(--muted);font-size:13px;margin:2px 0 6px}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--bg);
 padding:0 3px;border-radius:3px}
.run{margin:10px 0 18px}
.run.small{border:2px dashed #d4a72c;border-radius:6px;padding:4px 14px 10px;background:#fffdf5}
.caveat{background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:4px 10px;font-size:14px;
 display:inline-block;margin:4px 0 6px}
.tag{font-size:12px;border-radius:10px;padding:1px 8px;margin-left:6px;vertical-align:2px;font-weight:600}
.tag.rec{background:#dafbe1;color:#116329}.tag.q{background:#fff8c5;color:#7d4e00}
.missing{color:var(--muted);font-style:italic}
.plots{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start;margin-top:8px}
figure{margin:0;max-width:100%}
figure img{display:block;max-width:100%;height:auto;border:1px solid var(--line);cursor:zoom-in;background:#fff}
figcaption{font-size:12.5px;color:var(--muted);margin-top:2px}
.skipped li{margin:3px 0}.skipped code{white-space:nowrap}
#lightbox{display:none;position:fixed;inset:0;z-index:10;background:rgba(0,0,0,.8);overflow:auto;
 cursor:zoom-out;padding:20px}
#lightbox.on{display:block}#lightbox img{display:block;margin:0 auto;background:#fff;max-width:none}
#lightbox p{color:#fff;text-align:center;margin:0 0 8px;font-size:14px}
"""

JS = """
function pwCount(){var im=document.querySelectorAll('img[data-plot]'),ok=0;
 im.forEach(function(i){if(i.complete&&i.naturalWidth>0)ok++});
 document.body.dataset.imagesLoaded=ok+'/'+im.length;}
window.addEventListener('load',pwCount);
document.addEventListener('click',function(e){var lb=document.getElementById('lightbox');
 var t=e.target;
 if(t.matches&&t.matches('img[data-plot]')){e.preventDefault();
  lb.querySelector('img').src=t.src;lb.querySelector('p').textContent=t.alt+' (full size; click or Esc to close)';
  lb.classList.add('on');return;}
 if(lb.classList.contains('on')&&lb.contains(t)){lb.classList.remove('on');lb.querySelector('img').src='';}});
document.addEventListener('keydown',function(e){if(e.key==='Escape'){
 document.getElementById('lightbox').classList.remove('on');}});
"""


def _verdict_cell(c: dict, *, check: bool = False) -> str:
    v = c["verdict"]
    shown = {"supported": "pass", "not supported": "FAIL"}.get(v, v) if check else v
    cls = {"pass": "pass", "FAIL": "fail"}.get(shown, v.replace(" ", "-"))
    reason = c.get("reason", "")
    return (f"<td class='v {cls}' title='{_esc(reason)}'>{_esc(shown)}"
            f"<span class='reason'>{inline(reason)}</span></td>")


def _claims_table(doc: dict) -> str:
    claims = doc["claims"]
    if not claims:
        return "<p class='missing'>No claims in this run (checks only).</p>"
    paired = any(c.get("differences") for c in claims)
    head = ["claim", "statement", "metric", "method [95% CI]", "baselines"] + (["paired difference"] if paired else [])
    head += ["rule", "verdict"]
    rows = []
    for c, r in zip(claims, claim_rows(claims)):
        bases = "<br>".join(f"{_est_html(f'{k}: ' + fmt_estimate(v))}"
                            for k, v in c.get("baselines", {}).items()) or "—"
        cells = [f"<td><code>{_esc(c['id'])}</code></td>",
                 f"<td class='stmt'>{inline(c['statement'])}"
                 + (f"<span class='note'>{inline(c['notes'])}</span>" if c.get("notes") else "") + "</td>",
                 f"<td>{inline(c['metric'])}</td>",
                 f"<td class='est'>{_est_html(r['method'])}</td>",
                 f"<td class='est'>{bases}</td>"]
        if paired:
            d = "<br>".join(f"{_est_html(f'vs {k}: ' + fmt_estimate(v))}"
                            for k, v in (c.get("differences") or {}).items())
            cells.append(f"<td class='est'>{d or '—'}</td>")
        cells += [f"<td class='rule'>{inline(r['rule'])}</td>", _verdict_cell(c)]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ("<div class='tw'><table class='claims'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def _est_html(s: str) -> str:
    """``name: 0.81 [0.76, 0.86]`` with the value and the interval each kept on one line."""
    head, sep, ci = s.partition(" [")
    return f"<span>{_esc(head)}</span> <i>[{_esc(ci)}</i>" if sep else f"<span>{_esc(s)}</span>"


def _checks_table(doc: dict) -> str:
    checks = doc.get("checks") or []
    if not checks:
        return ""
    rows = []
    for c, r in zip(checks, claim_rows(checks)):
        rows.append(f"<tr><td><code>{_esc(c['id'])}</code></td><td>{inline(c['statement'])}</td>"
                    f"<td>{inline(c['metric'])}: <span class='num'>{_esc(r['method'])}</span></td>"
                    f"<td class='rule'>{inline(r['rule'])}</td>{_verdict_cell(c, check=True)}</tr>")
    return ("<h4>Checks <span class='meta'>(identities and sanity properties that hold by construction; "
            f"not claims) · {_esc(_checks_text(doc))}</span></h4>"
            "<table class='checks'><thead><tr><th>check</th><th>statement</th><th>value</th><th>rule</th>"
            "<th>result</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _figures(run: Run) -> str:
    if not run.plots:
        return ""
    figs = []
    for p in run.plots:
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        size = _png_size(p)
        wh = f" width='{size[0]}' height='{size[1]}'" if size else ""
        figs.append(f"<figure><img data-plot alt='{_esc(p.name)}' title='click to enlarge'{wh} loading='eager' "
                    f"src='data:image/png;base64,{data}'>"
                    f"<figcaption>{_esc(p.name)}{f' · {size[0]}×{size[1]} px' if size else ''}"
                    f"{' · quick run: ' + CAVEAT if run.small else ''}</figcaption></figure>")
    return "<div class='plots'>" + "".join(figs) + "</div>"


def _run_block(run: Run) -> str:
    doc = run.doc
    n = counts(doc)
    tag = ("<span class='tag rec'>result of record</span>" if run.record
           else f"<span class='tag q'>{_esc(run.kind)}</span>" if run.small else "")
    caveat = f"<div class='caveat'>⚠ <b>{_esc(run.kind)}</b>: {CAVEAT}.</div>" if run.small else ""
    summary = (f"Claims: <b class='supported'>{n['supported']} supported</b>, "
               f"<b class='not-supported'>{n['not supported']} not supported</b>, "
               f"<b class='inconclusive'>{n['inconclusive']} inconclusive</b>; checks: {_esc(_checks_text(doc))}")
    return (f"<div class='run{' small' if run.small else ''}' id='{_esc(run.anchor)}'>"
            f"<h3>{_esc(doc['experiment'])}{tag}</h3>{caveat}"
            f"<p class='meta'>{inline(run_header(doc))} · created {_esc(doc.get('created', '?'))}"
            f" · file <code>{_esc(run.label)}</code></p>"
            f"<p class='meta'>{summary}</p>"
            + _claims_table(doc) + _checks_table(doc) + _figures(run) + "</div>")


def _overview_cells(p: Package, out_dir: Path) -> dict[str, str]:
    runs = p.ordered()

    def lines(f) -> str:
        return "<br>".join(f(r) for r in runs) if runs else "—"

    def cnt(key):
        def one(r):
            n = counts(r.doc)[key]
            return f"<span class='{key.replace(' ', '-')}{' zero' if n == 0 else ''}'>{n}</span>"
        return lines(one)

    def exp(r: Run) -> str:
        t = "record" if r.record else ("demo: " + CAVEAT.split(";")[0] if r.small else "run")
        return f"<a href='#{_esc(r.anchor)}' title='{_esc(t)}'>{_esc(_exp_name(r))}</a>"

    experiments = lines(exp)
    if p.skipped:
        experiments += ("<br>" if runs else "") + f"<span class='fail'>{len(p.skipped)} file(s) skipped</span>"
    if not runs and not p.skipped:
        experiments = "<span class='missing'>no results</span>"
    readme = f"<a href='{_esc(_rel(p.readme, out_dir))}'>README</a>" if p.readme else "—"
    return {"package": f"<a href='#pkg-{_esc(p.slug)}'><b>{_esc(p.slug)}</b></a>",
            "paper": inline(p.title) if p.title else "<span class='missing'>—</span>",
            "readme": readme, "experiments": experiments,
            "supported": cnt("supported"), "not supported": cnt("not supported"),
            "inconclusive": cnt("inconclusive"),
            "checks": lines(lambda r: _esc(_checks_text(r.doc))),
            "wall": lines(lambda r: _esc(_wall(r.doc)))}


def _overview_html(pkgs: dict[str, Package], out_dir: Path) -> str:
    head = ["package", "paper", "README", "experiment", "supported", "not supported", "inconclusive",
            "checks", "wall time"]
    rows = []
    for p in pkgs.values():
        c = _overview_cells(p, out_dir)
        rows.append(f"<tr><td>{c['package']}</td><td class='t'>{c['paper']}</td><td>{c['readme']}</td>"
                    f"<td>{c['experiments']}</td><td class='num'>{c['supported']}</td>"
                    f"<td class='num'>{c['not supported']}</td><td class='num'>{c['inconclusive']}</td>"
                    f"<td>{c['checks']}</td><td class='num'>{c['wall']}</td></tr>")
    return ("<table class='overview' id='overview-table'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            f"<p class='meta'>* quick/smoke runs from <code>make demo</code> are {CAVEAT}. "
            "Checks (pass/fail) are identities and sanity properties, never counted among the claims.</p>")


def _totals(pkgs: dict[str, Package], skipped: list[Skipped]) -> dict:
    t = {"record": {"supported": 0, "not supported": 0, "inconclusive": 0, "runs": 0},
         "demo": {"supported": 0, "not supported": 0, "inconclusive": 0, "runs": 0},
         "checks": {"pass": 0, "fail": 0, "inconclusive": 0}}
    for p in pkgs.values():
        for r in p.runs:
            k = "record" if r.record else "demo"
            t[k]["runs"] += 1
            for v, n in counts(r.doc).items():
                t[k][v] += n
            for v, n in check_counts(r.doc).items():
                t["checks"][v] += n
    t["skipped"] = len(skipped)
    t["packages"] = len(pkgs)
    return t


def _totals_text(t: dict) -> str:
    def part(k, name):
        d = t[k]
        return (f"{name} ({d['runs']} file(s)): {d['supported']} supported, {d['not supported']} not supported, "
                f"{d['inconclusive']} inconclusive")

    ch = t["checks"]
    checks = f"checks: {ch['pass']} pass, {ch['fail']} fail" + (f", {ch['inconclusive']} inconclusive"
                                                                 if ch["inconclusive"] else "")
    return (f"{t['packages']} package(s) · " + part("record", "results of record") + " · "
            + part("demo", "demo runs") + " · " + checks + f" · {t['skipped']} file(s) skipped")


def _package_html(p: Package, out_dir: Path, records_known: bool) -> str:
    links = []
    if p.readme:
        links.append(f"<a href='{_esc(_rel(p.readme, out_dir))}'>README</a>")
    links.append("<a href='#top'>back to the overview</a>")
    body = []
    runs = p.ordered()
    if records_known and not any(r.record for r in runs):
        body.append("<p class='missing'>No results of record committed yet "
                    f"(<code>packages/{_esc(p.slug)}/results/paper.json</code>).</p>")
    body += [_run_block(r) for r in runs]
    if not runs:
        body.append("<p class='missing'>No results for this package.</p>")
    if p.skipped:
        body.append("<p class='fail'>Skipped: " + "; ".join(f"<code>{_esc(s.label)}</code>" for s in p.skipped)
                    + " (see <a href='#skipped'>skipped files</a>).</p>")
    title = f" <span class='title'>— {inline(p.title)}</span>" if p.title else ""
    return (f"<section class='pkg' id='pkg-{_esc(p.slug)}'><h2>{_esc(p.slug)}{title}</h2>"
            f"<p class='links'>{' · '.join(links)}</p>" + "".join(body) + "</section>")


def render_html(pkgs: dict[str, Package], skipped: list[Skipped], out_dir: Path, records_known: bool) -> str:
    t = _totals(pkgs, skipped)
    nav = ["<b>paperworks report</b>", "<a href='#overview'>overview</a>"]
    nav += [f"<a href='#pkg-{_esc(s)}'>{_esc(s)}</a>" for s in pkgs]
    if skipped:
        nav.append(f"<a href='#skipped' class='fail'>skipped files ({len(skipped)})</a>")
    skipped_html = ""
    if skipped:
        items = "".join(f"<li><code>{_esc(s.label)}</code> — {_esc(s.why)}</li>" for s in skipped)
        skipped_html = (f"<section id='skipped'><h2>Skipped files</h2><p class='meta'>Not valid results files; "
                        f"left out of every count.</p><ul class='skipped'>{items}</ul></section>")
    sections = "".join(_package_html(p, out_dir, records_known) for p in pkgs.values())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>paperworks report</title><style>{CSS}</style></head>
<body id="top"><nav>{' '.join(nav)}</nav><main>
<h1>paperworks report</h1>
<p class="totals" id="totals">{_esc(_totals_text(t))}</p>
<p class="lead">Built from the <code>results.json</code> files; nothing typed. Results of record are each package's
committed <code>paper</code> and <code>bench</code> runs; demo runs (<code>make demo</code>, experiment
<code>quick</code>) are {CAVEAT}. Click a figure to see it at full size.</p>
<section id="overview"><h2>Overview</h2>{_overview_html(pkgs, out_dir) if pkgs else '<p>No results found.</p>'}</section>
{skipped_html}{sections}
</main><div id="lightbox"><p></p><img alt=""></div><script>{JS}</script></body></html>
"""


# ---------------------------------------------------------------------------------------------
# Markdown

def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_markdown(pkgs: dict[str, Package], skipped: list[Skipped], out_dir: Path, records_known: bool) -> str:
    t = _totals(pkgs, skipped)
    md = ["# paperworks report", "", _totals_text(t) + ".", "",
          "Built from the `results.json` files; nothing typed. Results of record are each package's committed "
          f"`paper` and `bench` runs; demo runs (`quick`, marked *) are {CAVEAT}.", "", "## Overview", ""]
    md += ["| package | paper | README | experiment | supported | not supported | inconclusive | checks | wall time |",
           "|---|---|---|---|---|---|---|---|---|"]
    for p in pkgs.values():
        runs = p.ordered()

        def col(f, runs=runs):
            return "<br>".join(f(r) for r in runs) if runs else "—"

        exps = col(_exp_name)
        if p.skipped:
            exps += ("<br>" if runs else "") + f"{len(p.skipped)} file(s) skipped"
        elif not runs:
            exps = "no results"
        cells = [f"[{p.slug}](#pkg-{p.slug})", p.title or "—",
                 f"[README]({_rel(p.readme, out_dir)})" if p.readme else "—", exps,
                 col(lambda r: str(counts(r.doc)["supported"])), col(lambda r: str(counts(r.doc)["not supported"])),
                 col(lambda r: str(counts(r.doc)["inconclusive"])), col(lambda r: _checks_text(r.doc)),
                 col(lambda r: _wall(r.doc))]
        md.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    if not pkgs:
        md.append("| — | no results found | | | | | | | |")
    if skipped:
        md += ["", "## Skipped files", "", "Not valid results files; left out of every count.", ""]
        md += [f"- `{s.label}` — {_md_cell(s.why)}" for s in skipped]
    for p in pkgs.values():
        md += ["", f'<a id="pkg-{p.slug}"></a>', "", f"## {p.slug}" + (f" — {p.title}" if p.title else ""), ""]
        if p.readme:
            md += [f"[README]({_rel(p.readme, out_dir)})", ""]
        runs = p.ordered()
        if records_known and not any(r.record for r in runs):
            md += [f"_No results of record committed yet (`packages/{p.slug}/results/paper.json`)._", ""]
        if not runs:
            md += ["_No results for this package._", ""]
        for r in runs:
            md += [f"### {r.experiment} — {r.kind}", ""]
            if r.small:
                md += [f"> **{r.kind}**: {CAVEAT}.", ""]
            md += [run_header(r.doc) + f" · file `{r.label}`", "", markdown_table(r.doc), ""]
            reasons = [f"- `{c['id']}`: {c['verdict']} — {c['reason']}" for c in r.doc["claims"] if c.get("reason")]
            if reasons:
                md += ["Why each verdict:", "", *reasons, ""]
        if p.skipped:
            md += ["Skipped: " + "; ".join(f"`{s.label}`" for s in p.skipped), ""]
    return "\n".join(md).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------

def build_report(runs_root, out_dir, *, records_root=None, repo_root=None) -> tuple[Path, Path]:
    """Write ``out_dir/index.html`` and ``out_dir/summary.md``; return their paths.

    Args:
        runs_root: where the demo runs are (every ``results.json`` below it, PNGs beside each).
        out_dir: where the page and the summary go (created).
        records_root: the packages folder holding ``<slug>/results/{paper,bench}.json`` and
            ``<slug>/README.md``; default ``<repo_root>/packages``.
        repo_root: the monorepo root; default ``records_root``'s parent, else the first ancestor of
            ``runs_root`` (or ``out_dir``) that holds ``packages/`` and ``shared/``. Without either,
            the report shows the runs only (no titles, README links or results of record).
    """
    runs_root, out_dir = Path(runs_root), Path(out_dir)
    if records_root is None:
        if repo_root is None:
            repo_root = find_repo_root(runs_root, out_dir)
        if repo_root is not None and (Path(repo_root) / "packages").is_dir():
            records_root = Path(repo_root) / "packages"
    records_root = None if records_root is None else Path(records_root)
    pkgs, skipped = collect(runs_root, records_root)
    known = records_root is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    index = atomic_write_text(out_dir / "index.html", render_html(pkgs, skipped, out_dir, known))
    summary = atomic_write_text(out_dir / "summary.md", render_markdown(pkgs, skipped, out_dir, known))
    return index, summary
