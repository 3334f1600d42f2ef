"""Results of record (``pkg`` is parametrised over the packages by conftest.py): each package's committed paper/bench results validate and its README tables match them."""

import json

import pytest

from paperworks.tables import RECORDS, load_record, render


def test_results_of_record_validate_and_readme_tables_match(pkg):
    records = sorted((pkg / "results").glob("*.json")) if (pkg / "results").is_dir() else []
    for rec in records:
        assert rec.stem in RECORDS, f"{rec}: only {RECORDS} runs are results of record"
        doc = load_record(rec)  # raises naming the file when it fails the schema or a verdict
        assert doc["package"] == pkg.name and doc["experiment"] == rec.stem
        assert "+dirty" not in doc["git_commit"], f"{rec}: recorded from uncommitted code"
        text = (pkg / "README.md").read_text(encoding="utf-8")
        assert f"<!-- paperworks:results {rec.stem} -->" in text, f"{pkg.name}/README.md lacks the {rec.stem} block"
    old, new = render(pkg)
    assert old == new, (f"{pkg.name}/README.md results tables differ from results/: "
                        f"run `python -m paperworks tables packages/{pkg.name}`")


def test_a_tampered_record_is_caught(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "results").mkdir(parents=True)
    from paperworks import Claim, write_results

    c = Claim.threshold("c", "s", "m", [1.0, 1.1, 0.9], threshold=0.5, better="higher")
    doc = write_results(tmp_path / "run", package="pkg", experiment="paper", config={}, claims=[c], seeds=[0, 1, 2],
                        timings={"total_s": 1.0})
    doc["claims"][0]["method"]["value"] = 0.1  # below the interval: the schema check refuses it
    (pkg / "results" / "paper.json").write_text(json.dumps(doc))
    (pkg / "README.md").write_text("<!-- paperworks:results paper -->\n<!-- paperworks:end -->\n")
    with pytest.raises(ValueError, match="paper.json"):
        render(pkg)
