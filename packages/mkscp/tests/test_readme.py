import shlex
from pathlib import Path

from mkscp.run import run

from paperworks.hydra_glue import compose, execute
from paperworks.testing import readme_python_blocks

README = Path(__file__).parents[1] / "README.md"


def test_readme_quickstart_runs():
    blocks = readme_python_blocks(README)
    ns = {}  # the blocks continue one another
    for block in blocks:
        exec(compile(block, "README.md", "exec"), ns)
    assert ns["gs"].best_params_["nonconformity_score"] in ("mks", "mahalanobis", "bonferroni")


def test_readme_has_the_sections():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    for h in ("## Paper", "## Method", "## Install", "## Quickstart", "## CLI", "## Results"):
        assert h in text


def test_readme_user_data_example_runs(tmp_path, monkeypatch):
    # the "Your data" section: write load_linnerud to a CSV, then run the CLI line exactly as printed
    monkeypatch.chdir(tmp_path)
    for block in readme_python_blocks(README, "## Your data"):
        exec(compile(block, "README.md", "exec"), {})
    section = README.read_text().split("## Your data", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in section.splitlines() if ln.startswith("mkscp experiment=data"))
    args = shlex.split(line)[1:]
    # in-process through the same Hydra config and results writer as the console script (tested on smoke)
    cfg = compose("mkscp", [*args, "seeds=2", "n_mc=2000", "mc_max_points=8000"])
    doc = execute("mkscp", run, cfg, tmp_path / "run")
    assert doc["experiment"] == "data" and doc["extra"]["data"]["n"] == 20 and doc["extra"]["data"]["d"] == 3
    assert doc["extra"]["data"]["features"] == ["Chins", "Situps", "Jumps"]
    assert {c["id"] for c in doc["claims"]} == {"volume_vs_mahalanobis"}


def test_readme_detail_tables_match_the_records():
    from mkscp.report import render

    old, new = render(README.parent)
    assert "<!-- mkscp:extra paper -->" in old and "<!-- mkscp:extra bench -->" in old
    assert old == new, "run `python -m mkscp.report packages/mkscp`"


def test_detail_tables_fill_empty_blocks_and_keep_the_rest(tmp_path):
    import shutil

    from mkscp.report import render

    (tmp_path / "results").mkdir()
    for f in ("paper.json", "bench.json"):
        shutil.copy(README.parent / "results" / f, tmp_path / "results" / f)
    text = ("a\n<!-- mkscp:extra paper -->\n<!-- mkscp:end -->\nKEEP\n<!-- paperworks:results bench -->\n"
            "<!-- mkscp:extra bench -->\n<!-- mkscp:end -->\nz\n")
    (tmp_path / "README.md").write_text(text)
    _, new = render(tmp_path)
    assert "KEEP\n<!-- paperworks:results bench -->" in new and new.endswith("<!-- mkscp:end -->\nz\n")
    assert "Split trap" in new and "Spearman vs exact" in new and new.count("<!-- mkscp:end -->") == 2
