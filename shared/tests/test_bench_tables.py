"""paperworks.bench (interleaved timing, peak memory), results tables and sweep aggregation."""

import json
import time

import numpy as np
import pytest

from paperworks import Claim, write_results
from paperworks.aggregate import aggregate
from paperworks.bench import compare, peak_memory
from paperworks.tables import block, markdown_table, update


def _sleep(s):
    return lambda: time.sleep(s)


def test_compare_interleaves_and_reports_paired_ratios():
    calls = []
    res = compare({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=4, warmup=1, threads=1)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"]  # warm-up, then alternating order
    assert res.threads == 1 and len(res.wall["a"]) == 4 and len(res.cpu["b"]) == 4
    res = compare({"slow": _sleep(0.02), "fast": _sleep(0.005)}, repeats=5, warmup=0, threads=None)
    s = res.speedup("fast", over="slow")
    assert 2.0 < s.lower <= s.value <= s.upper < 6.0 and s.method == "bootstrap-median"
    assert res.median("slow", "cpu") < 0.01, "sleeping uses no CPU time: CPU time is measured apart"
    rows = res.rows()
    assert {r["candidate"] for r in rows} == {"slow", "fast"} and all("cpu_median_s" in r for r in rows)
    claim = Claim.threshold("speedup", "fast beats slow 2x", "speed-up", s, threshold=2.0, better="higher")
    assert claim.verdict == "supported"


@pytest.mark.parametrize("kw", [{"repeats": 2}, {"repeats": 3, "warmup": -1}, {"repeats": True}])
def test_compare_rejects_bad_budgets(kw):
    with pytest.raises(ValueError):
        compare({"a": lambda: None}, **kw)
    with pytest.raises(TypeError):
        compare({"a": 3})


def _alloc(mb):
    x = np.ones(int(mb * 2**20 // 8))
    return float(x.sum())


def _make_input():
    return (np.ones(int(64 * 2**20 // 8)),)


def _touch(x):
    return float(x[::4096].sum())


def test_peak_memory_counts_the_call_not_the_setup():
    big = peak_memory(_alloc, 200)
    small = peak_memory(_alloc, 10)
    assert big.method == "vmhwm" and 180 < big.mib < 260, big
    assert small.mib < 60
    reuse = peak_memory(_touch, setup=_make_input)
    assert reuse.mib < 30, "inputs built by setup() are not charged to the call"
    with pytest.raises(RuntimeError, match="failed in the child"):
        peak_memory(_alloc, "x")


def _sleep_then_spin(sleep_s, spin_s):
    import time

    time.sleep(sleep_s)
    t0 = time.process_time()
    while time.process_time() - t0 < spin_s:
        pass


def _slow_setup():
    import time

    time.sleep(2.0)
    return ()


def test_peak_memory_times_the_same_call_after_setup():
    m = peak_memory(_sleep_then_spin, 0.3, 0.2, setup=_slow_setup)
    assert 0.5 <= m.wall_s < 1.9, m  # the call's sleep and spin, not the set-up's 2 s
    assert 0.15 <= m.cpu_s < m.wall_s, m


def _doc(tmp_path, name, experiment="paper", seeds=(0, 1, 2), vals=(1.0, 1.2, 1.1)):
    c = Claim.compare("p", "beats `b`", "m", list(vals), baseline="b", baselines={"b": [v - 0.5 for v in vals]},
                      better="higher", paired=True)
    k = Claim.check("k", "identity", "residual", 0.0, threshold=1e-9, better="lower")
    return write_results(tmp_path / name, package="paperworks", experiment=experiment, config={"seed": 0},
                         claims=[c, k], seeds=list(seeds), timings={"total_s": 12.0})


def test_tables_regenerate_and_check_readmes(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "results").mkdir(parents=True)
    doc = _doc(tmp_path, "run")
    (pkg / "results" / "paper.json").write_text(json.dumps(doc))
    (pkg / "README.md").write_text("# x\n\n## Results\n\n<!-- paperworks:results paper -->\nold\n<!-- paperworks:end -->\n\nend\n")
    assert update(pkg, check=True) is False
    assert update(pkg) is False and update(pkg, check=True) is True
    text = (pkg / "README.md").read_text()
    assert "| `p` | beats `b` |" in text and "paired over seeds" in text and "**supported**" in text
    assert "Checks (identities" in text and "| `k` |" in text and text.endswith("end\n")
    assert "1 supported, 0 not supported, 0 inconclusive; 1 check(s)" in block("paper", doc)
    assert "x\\|y" in markdown_table({"claims": [Claim.threshold("x", "x|y", "m", 1.0, threshold=0, better="higher",
                                                                 exact=True).to_dict()]})
    (pkg / "results" / "paper.json").write_text('{"schema_version": 2}')
    with pytest.raises(ValueError, match="paper.json"):
        update(pkg, check=True)


def test_package_tables_come_from_the_package_module(tmp_path, monkeypatch):
    pkg = tmp_path / "pwtabledemo"
    (pkg / "results").mkdir(parents=True)
    doc = _doc(tmp_path, "run")
    (pkg / "results" / "paper.json").write_text(json.dumps(doc))
    (pkg / "README.md").write_text("# x\n\n<!-- paperworks:table arms -->\nstale\n<!-- paperworks:end -->\nend\n")
    with pytest.raises(ModuleNotFoundError, match="pwtabledemo.readme_tables"):
        update(pkg, check=True)
    src = tmp_path / "src" / "pwtabledemo"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "readme_tables.py").write_text(
        "def readme_tables(records):\n"
        "    return {'arms': '| record | claims |\\n|---|---|\\n' + ''.join(\n"
        "        f'| {k} | {len(v[\"claims\"])} |\\n' for k, v in records.items())}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    assert update(pkg, check=True) is False and update(pkg) is False and update(pkg, check=True) is True
    text = (pkg / "README.md").read_text()
    assert "| paper | 1 |" in text and "stale" not in text and text.endswith("<!-- paperworks:end -->\nend\n")
    (pkg / "README.md").write_text("<!-- paperworks:table other -->\n<!-- paperworks:end -->\n")
    with pytest.raises(KeyError, match="other"):
        update(pkg, check=True)


def test_record_keeps_the_runs_metrics_rows_for_package_tables(tmp_path):
    from paperworks.tables import package_tables, record

    pkg = tmp_path / "pwtabledemo2"
    run = tmp_path / "run"
    _doc(tmp_path, "run")
    (run / "metrics.csv").write_text("seed,value\n0,1.5\n1,2.5\n")
    record(run, pkg)
    assert (pkg / "results" / "paper_metrics.csv").read_text() == "seed,value\n0,1.5\n1,2.5\n"
    src = tmp_path / "src" / "pwtabledemo2"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "readme_tables.py").write_text(
        "def readme_tables(records):\n    return {'rows': str([r['value'] for r in records['paper_metrics']])}\n")
    import sys
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        assert package_tables(pkg) == {"rows": "['1.5', '2.5']"}
    finally:
        sys.path.remove(str(tmp_path / "src"))
    (run / "metrics.csv").unlink()
    record(run, pkg)  # a run without rows leaves no older rows behind
    assert not (pkg / "results" / "paper_metrics.csv").exists()


def test_aggregate_pools_disjoint_seed_blocks(tmp_path):
    sweep = tmp_path / "sweep"
    _doc(sweep, "0", seeds=(0, 1, 2), vals=(1.0, 1.2, 1.1))
    _doc(sweep, "1", seeds=(3, 4, 5), vals=(1.05, 1.15, 0.95))
    doc = aggregate(sweep)
    assert doc["seeds"] == [0, 1, 2, 3, 4, 5] and doc["extra"]["jobs"] == 2
    m = doc["claims"][0]["method"]
    assert m["n"] == 6 and m["value"] == pytest.approx(np.mean([1.0, 1.2, 1.1, 1.05, 1.15, 0.95]))
    assert doc["claims"][0]["differences"]["b"]["n"] == 6
    assert (sweep / "aggregate" / "results.json").exists()
    _doc(sweep, "2", seeds=(5, 6, 7))
    with pytest.raises(ValueError, match="overlap"):
        aggregate(sweep, tmp_path / "out")


def test_cli_tables_and_validate(tmp_path):
    import subprocess
    import sys

    _doc(tmp_path, "run")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "paperworks", "validate", str(tmp_path)], capture_output=True,
                          text=True)
    assert proc.returncode == 1 and "BAD" in proc.stdout and "ok " in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "paperworks", "schema"], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout)["title"] == "paperworks results.json"
