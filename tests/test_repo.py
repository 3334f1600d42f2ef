"""Repository-level invariants: the README table, the top-level files, run_tests selection."""

import re
import subprocess
import sys

import conformity
import pytest
import run_tests

ROOT = conformity.ROOT
PACKAGES = conformity.package_dirs()


def readme_rows():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return {m[0]: (m[1], m[2]) for m in re.findall(r"^\| `(\w+)` \| .+? \| (planned|available) \| (.+?) \|$", text, re.M)}


def test_top_level_files_exist():
    for f in ("README.md", "CONTRIBUTING.md", "LICENSE", "Makefile", "pyproject.toml", "constraints.txt",
              ".github/workflows/ci.yml", ".ci/run", "tools/run_tests.py", "tools/new_package.py", "tools/report.py",
              "tools/demo.py", "tools/isolated.py", "tools/lock.py", "shared/pyproject.toml"):
        assert (ROOT / f).exists(), f
    assert "[project]" not in (ROOT / "pyproject.toml").read_text(), "top-level pyproject is tool config only"
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_readme_lists_every_paper_with_true_status():
    rows = readme_rows()
    assert len(rows) == 38
    have = {p.name for p in PACKAGES}
    for slug, (status, link) in rows.items():
        if slug in have:
            assert status == "available", f"{slug} exists: mark it available"
            assert f"(packages/{slug}/README.md)" in link
        else:
            assert status == "planned", f"{slug} has no package yet"


def test_changed_selection(monkeypatch):
    monkeypatch.setattr(run_tests, "packages", lambda: ["a", "b"])

    def diff(files):
        return lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout="\n".join(files))

    monkeypatch.setattr(run_tests.subprocess, "run", diff(["packages/b/src/b/x.py", "README.md"]))
    assert run_tests.changed_packages("main") == ["b"]
    monkeypatch.setattr(run_tests.subprocess, "run", diff(["shared/src/paperworks/stats.py"]))
    assert run_tests.changed_packages("main") == ["a", "b"]
    monkeypatch.setattr(run_tests.subprocess, "run", diff(["constraints.txt"]))
    assert run_tests.changed_packages("main") == ["a", "b"]
    monkeypatch.setattr(run_tests.subprocess, "run", diff(["docs.md"]))
    assert run_tests.changed_packages("main") == []


def test_list_is_json_for_ci():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--list", "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[" + ", ".join(f'"{p.name}"' for p in PACKAGES) + "]"


def test_unknown_package_is_refused():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--pkg", "nosuchpkg"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown package" in proc.stderr


@pytest.mark.parametrize("bad", ["Bad", "1abc", "a-b", "x"])
def test_new_package_rejects_bad_slugs(bad, tmp_path):
    import new_package

    with pytest.raises(ValueError, match="slug"):
        new_package.scaffold(bad, tmp_path)


def test_report_tool_refuses_missing_dir(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "report.py"), str(tmp_path / "none"), str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_license_is_mit_and_everywhere():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the paperworks authors" in text
    for d in [ROOT / "shared", ROOT / "tools" / "template", *PACKAGES]:
        assert conformity.check_license(d) == [], d


def test_readme_is_self_contained():
    """The README and CONTRIBUTING.md point only inside the repository."""
    for f in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / f).read_text(encoding="utf-8")
        assert "../shared" not in text and "shared/papers" not in text, f
        for link in re.findall(r"\]\(([^)#]+)", text):
            if not link.startswith(("http://", "https://")):
                assert (ROOT / link).exists(), f"{f} links to {link}, which is not in the repo"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    alone = readme.split("## One package alone", 1)[1].split("\n## ", 1)[0]
    assert "-e shared" in alone and "make dist" in alone and "--no-index --find-links dist" in alone


def test_papers_table_shows_the_results_of_record():
    import papers_table

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert papers_table.render(text) == text, "run `python tools/papers_table.py`"


def test_papers_table_counts_verdicts(tmp_path):
    import json

    import papers_table

    pkg = tmp_path / "packages" / "zz"
    (pkg / "results").mkdir(parents=True)
    claims = [{"verdict": v} for v in ("supported", "supported", "not supported", "inconclusive")]
    (pkg / "results" / "paper.json").write_text(json.dumps({"claims": claims}))
    text = ("| slug | paper | status | package |\n|---|---|---|---|\n"
            "| `zz` | A paper | available | [README](packages/zz/README.md) |\n| `yy` | B | planned | — |\n")
    out = papers_table.render(text, tmp_path)
    assert "| `zz` | A paper | available | [README](packages/zz/README.md) | paper 2 / 1 / 1 |" in out
    assert "| `yy` | B | planned | — | — |" in out
    assert papers_table.render(out, tmp_path) == out
