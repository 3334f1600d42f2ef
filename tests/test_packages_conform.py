"""Every package follows CONVENTIONS.md: layout, declared dependencies, a working console script."""

import conformity

from paperworks.testing import run_cli


def test_layout(pkg):
    assert conformity.check_layout(pkg) == []


def test_declares_what_it_imports(pkg):
    assert conformity.check_dependencies(pkg) == []


def test_console_script_smoke_writes_valid_results(pkg, tmp_path):
    doc = run_cli(pkg.name, tmp_path / "run", "experiment=smoke")  # load_results validates schema + verdicts
    assert doc["package"] == pkg.name
    assert doc["experiment"] == "smoke"
    assert doc["claims"], "a run must carry the paper's claims"
