"""The conformity checks themselves catch what they claim to (on broken copies of a real package)."""

import shutil

import conformity
import pytest

ROOT = conformity.ROOT


@pytest.fixture
def pkg_copy(tmp_path):
    dest = tmp_path / "packages" / "robustpredict"
    shutil.copytree(ROOT / "packages" / "robustpredict", dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_deptry_catches_test_only_and_undeclared_imports(pkg_copy):
    assert conformity.check_dependencies(pkg_copy) == []
    with open(pkg_copy / "src" / "robustpredict" / "run.py", "a") as f:
        f.write("\nimport pytest  # noqa\nimport networkx  # noqa\n")
    with open(pkg_copy / "tests" / "test_cli.py", "a") as f:
        f.write("\nimport statsmodels  # noqa\n")
    found = "\n".join(conformity.check_dependencies(pkg_copy))
    assert "src: DEP004 'pytest'" in found  # the [test] extra is not a runtime dependency
    assert "src: DEP003 'networkx'" in found  # installed, but not declared
    assert "tests: DEP003 'statsmodels'" in found


def test_deptry_catches_unused_runtime_dependency(pkg_copy):
    text = (pkg_copy / "pyproject.toml").read_text()
    (pkg_copy / "pyproject.toml").write_text(text.replace('"tqdm>=4.60",', '"tqdm>=4.60",\n    "networkx>=3",'))
    assert any("DEP002 'networkx'" in p for p in conformity.check_dependencies(pkg_copy))


def test_layout_catches_unversioned_paperworks_license_and_cli_test(pkg_copy):
    text = (pkg_copy / "pyproject.toml").read_text()
    (pkg_copy / "pyproject.toml").write_text(text.replace('"paperworks>=0.2,<0.3",', '"paperworks",'))
    (pkg_copy / "LICENSE").unlink()
    (pkg_copy / "tests" / "test_cli.py").write_text("def test_nothing():\n    assert True\n")
    found = "\n".join(conformity.check_layout(pkg_copy))
    assert "no upper bound" in found
    assert "LICENSE missing" in found
    assert "never runs the installed console script" in found
    (pkg_copy / "pyproject.toml").write_text(text.replace('"paperworks>=0.2,<0.3",', '"paperworks>=0.1,<0.2",'))
    assert any("does not admit shared/'s version" in p for p in conformity.check_layout(pkg_copy))
