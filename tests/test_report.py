"""The report builder (tools/report_builder.py) and its CLI (tools/report.py).

Everything is built in tmp_path: a fake repo with packages/<slug>/{README.md,results/paper.json},
a runs folder like ``make demo`` writes (runs/<slug>/quick/results.json + a PNG), and bad files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from paperworks.results import Claim, write_results

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))

import report  # noqa: E402  (tools/report.py, the CLI)
from report_builder import build_report, inline  # noqa: E402


def png_bytes(w: int = 320, h: int = 120) -> bytes:
    """A minimal valid RGB PNG (a gradient), no matplotlib needed."""
    raw = b"".join(b"\x00" + b"".join(bytes((x * 255 // w, y * 255 // h, 128)) for x in range(w)) for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def claims(strong: bool = True) -> list[Claim]:
    m = [0.91, 0.93, 0.92] if strong else [0.6, 0.9, 0.4]
    b = [0.81, 0.84, 0.80]
    return [
        Claim.threshold("acc", "The `fast` solver reaches accuracy > 0.8 on <toy> data", "accuracy", m,
                        threshold=0.8, better="higher", bounds=(0, 1), notes="3 seeds"),
        Claim.compare("beats_base", "It beats the baseline | paired over seeds", "accuracy", m,
                      baseline="base", baselines={"base": b}, better="higher", paired=True),
        Claim.threshold("speed", "It runs in under a second", "seconds", 0.5, threshold=1.0, better="lower"),
        Claim.check("residual", "The constraint residual is ~0", "residual", 1e-12, threshold=1e-8, better="lower"),
        Claim.check("mass", "Mass is conserved", "mass", 2.0, target=1.0, tol=1e-9),
    ]


def write(dir_: Path, package: str, experiment: str, strong: bool = True) -> dict:
    return write_results(dir_, package=package, experiment=experiment, config={}, claims=claims(strong),
                         seeds=[0, 1], timings={"total_s": 12.5 if experiment == "paper" else 1.0}, commit="abc123def456")


@pytest.fixture()
def tree(tmp_path: Path) -> dict:
    repo = tmp_path / "repo"
    pk = repo / "packages"
    (pk / "alpha").mkdir(parents=True)
    (pk / "alpha" / "README.md").write_text("# alpha — Alpha: a `fast` method for <toy> problems\n\ntext\n")
    (pk / "beta").mkdir()
    (pk / "beta" / "README.md").write_text("intro\n# beta — Beta & friends\n")
    # the results of record: packages/alpha/results/paper.json
    tmp = tmp_path / "tmp_rec"
    write(tmp, "alpha", "paper")
    (pk / "alpha" / "results").mkdir()
    shutil.copy(tmp / "results.json", pk / "alpha" / "results" / "paper.json")
    # demo runs
    runs = tmp_path / "runs"
    write(runs / "alpha" / "quick", "alpha", "quick", strong=False)
    (runs / "alpha" / "quick" / "scatter.png").write_bytes(png_bytes(900, 300))
    (runs / "alpha" / "quick" / "curve.png").write_bytes(png_bytes(200, 100))
    write(runs / "beta" / "quick", "beta", "quick")
    # bad files: not JSON; valid JSON that fails validation (a tampered verdict)
    (runs / "beta" / "broken").mkdir(parents=True)
    (runs / "beta" / "broken" / "results.json").write_text("{not json")
    doc = json.loads((runs / "beta" / "quick" / "results.json").read_text())
    doc["claims"][0]["verdict"] = "not supported" if doc["claims"][0]["verdict"] == "supported" else "supported"
    (runs / "gamma" / "quick").mkdir(parents=True)
    (runs / "gamma" / "quick" / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    return {"repo": repo, "records": pk, "runs": runs, "out": out}


@pytest.fixture()
def built(tree) -> dict:
    index, summary = build_report(tree["runs"], tree["out"], records_root=tree["records"])
    return {**tree, "index": index, "summary": summary, "html": index.read_text(), "md": summary.read_text()}


def _overview(html: str) -> str:
    m = re.search(r"<table class='overview'.*?</table>", html, re.S)
    assert m, "no overview table"
    return m.group(0)


def test_inline_renders_code_and_escapes():
    assert inline("use `a<b>` & <i>x</i>") == "use <code>a&lt;b&gt;</code> &amp; &lt;i&gt;x&lt;/i&gt;"
    assert inline("no code") == "no code"


def test_overview_first_with_titles_links_and_counts(built):
    html = built["html"]
    assert html.count("<h1") == 1
    ov = _overview(html)
    # the overview comes before every package section
    assert html.index("overview-table") < html.index("id='pkg-alpha'")
    rows = re.findall(r"<tr>.*?</tr>", ov.split("<tbody>")[1], re.S)
    assert len(rows) == 3  # alpha, beta, gamma (gamma has only a skipped file)
    alpha = next(r for r in rows if "#pkg-alpha" in r)
    assert "Alpha: a <code>fast</code> method for &lt;toy&gt; problems" in alpha  # title, rendered
    assert "alpha —" not in alpha
    assert "href='../repo/packages/alpha/README.md'" in alpha  # relative from out/
    assert ">paper<" in alpha and ">quick*<" in alpha
    assert "12 s" in alpha and "1.0 s" in alpha
    # checks are counted apart: 1 pass, 1 FAIL per run; 3 claims per run
    assert alpha.count("1 pass, 1 FAIL") == 2
    beta = next(r for r in rows if "#pkg-beta" in r)
    assert "Beta &amp; friends" in beta and "1 file(s) skipped" in beta
    gamma = next(r for r in rows if "#pkg-gamma" in r)
    assert "1 file(s) skipped" in gamma and "README" not in gamma.split("</td>")[2]
    # nav of section links and the totals line
    nav = re.search(r"<nav>.*?</nav>", html, re.S).group(0)
    for slug in ("alpha", "beta", "gamma"):
        assert f"href='#pkg-{slug}'" in nav and f"id='pkg-{slug}'" in html
    totals = re.search(r"<p class=\"totals\" id=\"totals\">(.*?)</p>", html).group(1)
    assert "results of record (1 file(s)): 2 supported, 0 not supported, 1 inconclusive" in totals
    assert "demo runs (2 file(s))" in totals and "checks: 3 pass, 3 fail" in totals and "2 file(s) skipped" in totals


def test_claim_rows_show_rule_reason_and_differences(built):
    html = built["html"]
    sec = html[html.index("id='pkg-alpha'"):html.index("id='pkg-beta'")]
    # record first, then the quick run, labelled as too small to decide
    assert sec.index("pkg-alpha-record-paper") < sec.index("pkg-alpha-run-quick")
    assert "result of record" in sec
    quick = sec[sec.index("pkg-alpha-run-quick"):]
    assert "too small to decide; the paper run is the result of record" in quick
    # statement rendered (code span, escaping), rule in words, verdict with its reason
    assert "The <code>fast</code> solver reaches accuracy &gt; 0.8 on &lt;toy&gt; data" in sec
    assert "`fast`" not in sec.replace("data-", "")
    assert "≥ 0.8" in sec
    assert "beats base, higher is better, paired over seeds" in sec
    assert "paired difference" in sec and "vs base: " in sec
    assert "the whole interval is at or above 0.8" in sec  # the reason, shown
    assert "title='the whole interval is at or above 0.8'" in sec  # and as a tooltip
    assert "no confidence interval" in sec  # the bare-value claim is inconclusive, and says why
    assert "<span class='note'>3 seeds</span>" in sec


def test_checks_apart_not_counted_as_claims(built):
    html = built["html"]
    sec = html[html.index("id='pkg-alpha-record-paper'"):html.index("id='pkg-alpha-run-quick'")]
    claims_t = re.search(r"<table class='claims'>.*?</table>", sec, re.S).group(0)
    checks_t = re.search(r"<table class='checks'>.*?</table>", sec, re.S).group(0)
    assert "residual" not in claims_t and "mass" not in claims_t
    assert "<code>residual</code>" in checks_t and ">pass<" in checks_t and ">FAIL<" in checks_t
    assert claims_t.count("<tr>") == 1 + 3
    assert "Claims: <b class='supported'>2 supported</b>" in sec


def test_figures_inline_full_size_and_enlargeable(built):
    html = built["html"]
    imgs = re.findall(r"<img data-plot[^>]*>", html)
    assert len(imgs) == 2  # only the alpha quick run has PNGs; records have none
    assert all("src='data:image/png;base64," in i for i in imgs)
    assert any("width='900' height='300'" in i for i in imgs)
    assert "max-width:480px" not in html and "max-width:100%" in html
    assert "id=\"lightbox\"" in html  # click → full size overlay
    assert "src='http" not in html and "src=\"http" not in html  # self-contained


def test_skipped_files_listed_not_fatal(built):
    html, md = built["html"], built["md"]
    sk = html[html.index("<section id='skipped'>"):]
    sk = sk[:sk.index("</section>")]
    assert "runs/beta/broken/results.json" in sk and "invalid JSON" in sk
    assert "runs/gamma/quick/results.json" in sk and "stored verdict" in sk
    assert "## Skipped files" in md and "`runs/beta/broken/results.json`" in md
    assert "`runs/gamma/quick/results.json`" in md


def test_summary_md_overview_and_statement_column(built):
    md = built["md"]
    assert md.startswith("# paperworks report\n")
    assert "| package | paper | README | experiment | supported | not supported | inconclusive | checks |" in md
    assert "[alpha](#pkg-alpha) | Alpha: a `fast` method for <toy> problems | [README](../repo/packages/alpha/README.md)" in md
    assert "| claim | statement | method | baselines | rule | verdict |" in md
    assert "The `fast` solver reaches accuracy > 0.8 on <toy> data" in md
    assert "It beats the baseline \\| paired over seeds" in md  # pipes escaped in cells
    assert "### paper — result of record" in md and "### quick — quick run (demo)" in md
    assert "too small to decide; the paper run is the result of record" in md
    assert "| check | statement | value | rule | result |" in md


def test_repo_root_and_no_records(tree, tmp_path):
    # repo_root= finds packages/ itself
    index, _ = build_report(tree["runs"], tmp_path / "o1", repo_root=tree["repo"])
    assert "href='../repo/packages/alpha/README.md'" in index.read_text()
    # no repo known (tmp_path has no packages/ + shared/): runs only, no README links, still fine
    index, summary = build_report(tree["runs"], tmp_path / "o2")
    h = index.read_text()
    assert "README.md" not in h and "result of record" not in _overview(h)
    assert "pkg-alpha-run-quick" in h


def test_empty_runs(tmp_path):
    (tmp_path / "runs").mkdir()
    index, summary = build_report(tmp_path / "runs", tmp_path / "out")
    assert "No results found" in index.read_text()
    assert summary.read_text().startswith("# paperworks report")


def test_cli(tree, tmp_path, capsys):
    assert report.main([str(tmp_path / "nope"), str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert report.main([str(tree["runs"]), str(tree["out"]), "--records", str(tree["records"])]) == 0
    assert "report written" in capsys.readouterr().out
    assert (tree["out"] / "index.html").is_file() and (tree["out"] / "summary.md").is_file()
    assert "Alpha: a <code>fast</code>" in (tree["out"] / "index.html").read_text()


def test_cli_script_exit_2(tmp_path):
    r = subprocess.run([sys.executable, str(TOOLS / "report.py"), str(tmp_path / "nope"), str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "does not exist" in r.stderr


# ---------------------------------------------------------------------------------------------
# headless Chromium

@pytest.fixture(scope="session")
def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
            subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True,
                           timeout=1200)
        except (OSError, subprocess.SubprocessError):
            pass
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("headless Chromium is not available (Debian package `chromium`; "
                    "install it with `apt-get install -y chromium` as root)")
    return exe


def _chrome(exe: str, tmp_path: Path, *args: str, timeout: int = 60) -> subprocess.CompletedProcess:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--disable-extensions", "--mute-audio", f"--user-data-dir={tmp_path / 'chrome-profile'}",
           "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_page_renders_in_chromium(built, chromium, tmp_path):
    url = built["index"].resolve().as_uri()
    t0 = time.monotonic()
    r = _chrome(chromium, tmp_path, "--dump-dom", url)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    assert "id=\"overview-table\"" in dom and "#pkg-alpha" in dom
    m = re.search(r'data-images-loaded="(\d+)/(\d+)"', dom)
    assert m, "the page's load handler did not run"
    assert m.group(1) == m.group(2) == "2", f"images loaded: {m.group(0)}"
    shot = tmp_path / "shot.png"
    r = _chrome(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1400,2000",
                "--hide-scrollbars", url)
    assert shot.is_file() and shot.stat().st_size > 1000, r.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert time.monotonic() - t0 < 60
